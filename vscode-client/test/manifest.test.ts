// The extension's manifest and Marketplace pages, as published: package.json against the
// Marketplace's and Open VSX's rules (scripts/marketplace-rules.mjs, which scripts/check-vsix.mjs
// also applies to the packaged vsix), the icon, LICENSE, CHANGELOG and README.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";

/** vscode-client/, from out/test/. */
const CLIENT_DIR = path.resolve(__dirname, "..", "..");
const REPOSITORY_ROOT = path.resolve(CLIENT_DIR, "..");

type Manifest = Record<string, any>;
interface MarketplaceRules {
  marketplaceIssues(manifest: Manifest): string[];
  openVsxIssues(manifest: Manifest): string[];
  VSCODE_CATEGORIES: string[];
}

const manifest: Manifest = JSON.parse(readFileSync(path.join(CLIENT_DIR, "package.json"), "utf8"));
const readme = readFileSync(path.join(CLIENT_DIR, "README.md"), "utf8");

async function rules(): Promise<MarketplaceRules> {
  // A runtime import: the rules are plain JavaScript that check-vsix.mjs runs without a build.
  return (await import(pathToFileURL(path.join(CLIENT_DIR, "scripts", "marketplace-rules.mjs")).href)) as MarketplaceRules;
}

describe("package.json for the Marketplace and Open VSX", () => {
  it("meets the Marketplace's rules and Open VSX's", async () => {
    const { marketplaceIssues, openVsxIssues } = await rules();
    assert.deepEqual(marketplaceIssues(manifest), []);
    assert.deepEqual(openVsxIssues(manifest), []);
  });

  it("is a preview exactly while the version is 0.x", async () => {
    const { marketplaceIssues } = await rules();
    const previewIssue = (changes: Manifest) =>
      marketplaceIssues({ ...manifest, ...changes }).filter((issue) => issue.startsWith("preview"));
    assert.deepEqual(previewIssue({ version: "0.3.1", preview: true }), []);
    assert.deepEqual(previewIssue({ version: "1.0.0", preview: false }), []);
    assert.equal(previewIssue({ version: "0.3.1", preview: undefined }).length, 1);
    assert.equal(previewIssue({ version: "0.3.1", preview: false }).length, 1);
    assert.equal(previewIssue({ version: "1.0.0", preview: true }).length, 1);
  });

  it("refuses what the Marketplace or Open VSX would", async () => {
    const { marketplaceIssues, openVsxIssues } = await rules();
    const broken: Manifest = {
      ...manifest,
      icon: "images/icon.svg",
      galleryBanner: { color: "dark blue", theme: "grey" },
      categories: ["Linters", "PyTorch"],
      repository: { type: "git", url: "https://example.com/somewhere/else.git" },
    };
    const marketplace = marketplaceIssues(broken).join("\n");
    for (const field of ["icon", "galleryBanner.color", "galleryBanner.theme", "'PyTorch'", "repository"]) {
      assert.match(marketplace, new RegExp(field.replace(/[.']/g, "\\$&")));
    }
    const openVsx = openVsxIssues({ ...manifest, name: "fx lsp", version: "latest", description: "a\u0000b", bugs: { url: "not a url" } });
    assert.equal(openVsx.length, 4, openVsx.join("\n"));
  });

  it("has a PNG icon of at least 128x128", () => {
    const icon = readFileSync(path.join(CLIENT_DIR, manifest.icon));
    assert.ok(icon.subarray(1, 4).equals(Buffer.from("PNG")), "a PNG signature");
    // IHDR, the first chunk, holds the width and height at bytes 16 and 20.
    assert.ok(icon.readUInt32BE(16) >= 128 && icon.readUInt32BE(20) >= 128);
  });

  it("has the license package.json names, and a CHANGELOG entry for its version", () => {
    assert.equal(manifest.license, "MIT");
    assert.match(readFileSync(path.join(CLIENT_DIR, "LICENSE"), "utf8"), /^MIT License\n/);
    const changelog = readFileSync(path.join(CLIENT_DIR, "CHANGELOG.md"), "utf8");
    assert.match(changelog, new RegExp(`^## ${manifest.version.replace(/\./g, "\\.")}$`, "m"));
  });
});

describe("README.md for the Marketplace", () => {
  it("documents every command and every setting the extension contributes", () => {
    for (const command of manifest.contributes.commands) {
      assert.ok(readme.includes(`${command.category}: ${command.title}`), `${command.category}: ${command.title}`);
    }
    for (const setting of Object.keys(manifest.contributes.configuration.properties)) {
      assert.ok(readme.includes(`| \`${setting}\` |`), `a settings row for ${setting}`);
    }
  });

  it("links images and pages by their path from the repository root, and they exist", () => {
    // vsce makes these https URLs from package.json's repository; GitHub reads a leading `/` as
    // the repository root too. A `../` would come out as <repository>/raw/HEAD/../docs: broken.
    const links = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((match) => match[1]);
    const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((match) => match[1]);
    assert.ok(images.length >= 8, `a screenshot per feature: ${images.length}`);
    for (const link of links) {
      if (/^https:\/\//.test(link)) continue;
      assert.match(link, /^\/[^.]/, `a link from the repository root: ${link}`);
      assert.ok(existsSync(path.join(REPOSITORY_ROOT, link.split("#")[0])), `${link} exists`);
    }
  });
});
