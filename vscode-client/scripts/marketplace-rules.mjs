// The rules a manifest (package.json) must meet to be published on the Visual Studio
// Marketplace and on Open VSX, for the checks vsce and ovsx do not make before uploading:
// test/manifest.test.ts applies them to package.json, scripts/check-vsix.mjs to the package.json
// inside the vsix.

/** The vsix's size budget in KB (1024 bytes), stated in README.md's "Size" section. */
export const VSIX_BUDGET_KB = 1500;

/** VS Code's extension categories (EXTENSION_CATEGORIES in vs/platform/extensions/common/extensions.ts). */
export const VSCODE_CATEGORIES = [
  "AI", "Azure", "Chat", "Data Science", "Debuggers", "Extension Packs", "Education", "Formatters",
  "Keymaps", "Language Packs", "Linters", "Machine Learning", "Notebooks", "Programming Languages",
  "SCM Providers", "Snippets", "Testing", "Themes", "Visualization", "Other",
];

/** The repository every link of the manifest points into (there is no other public home yet). */
export const REPOSITORY_URL = "https://github.com/fx-lsp/fx-lsp";

/** The URL of a manifest field that is a string or an object with a `url` (repository, bugs). */
function urlOf(value) {
  return typeof value === "string" ? value : value?.url;
}

/**
 * What the Marketplace listing needs from the manifest and the project's own rules for it:
 * a PNG icon, a gallery banner, known categories, links into the repository, and `preview`
 * exactly while the version is 0.x (a 0.x release is a preview; a 1.0 that still says so is not
 * believed).
 */
export function marketplaceIssues(manifest) {
  const issues = [];
  const major = Number(String(manifest.version ?? "").split(".")[0]);
  if (!Number.isInteger(major)) issues.push(`version '${manifest.version}' is not major.minor.patch`);
  else if ((major === 0) !== (manifest.preview === true)) {
    issues.push(`preview is ${manifest.preview ?? "unset"} at version ${manifest.version}: it must be true exactly while the version is 0.x`);
  }
  if (typeof manifest.icon !== "string" || !/\.png$/i.test(manifest.icon)) {
    issues.push(`icon must be a PNG file (the Marketplace refuses SVG icons): ${manifest.icon}`);
  }
  const banner = manifest.galleryBanner ?? {};
  if (!/^#[0-9a-fA-F]{6}$/.test(banner.color ?? "")) issues.push(`galleryBanner.color must be #rrggbb: ${banner.color}`);
  if (!["dark", "light"].includes(banner.theme)) issues.push(`galleryBanner.theme must be dark or light: ${banner.theme}`);
  const categories = manifest.categories ?? [];
  if (categories.length === 0) issues.push("categories is empty");
  for (const category of categories) {
    if (!VSCODE_CATEGORIES.includes(category)) issues.push(`unknown category '${category}'`);
  }
  if ((manifest.keywords ?? []).length === 0) issues.push("keywords is empty");
  if (!manifest.license) issues.push("license is missing");
  for (const [field, url] of [
    ["homepage", manifest.homepage],
    ["repository", urlOf(manifest.repository)],
    ["bugs", urlOf(manifest.bugs)],
  ]) {
    if (typeof url !== "string" || !(url === REPOSITORY_URL || url.startsWith(`${REPOSITORY_URL}/`))) {
      issues.push(`${field} must point into ${REPOSITORY_URL}: ${url}`);
    }
  }
  return issues;
}

// Open VSX validates what it reads from the vsix's package.json on the server, after the upload
// (ExtensionValidator.validateMetadata in eclipse/openvsx, server/src/main/java/org/eclipse/openvsx/):
// ovsx itself only requires publisher, name and version, and a license for open-vsx.org. The
// rules below are the server's, so that a broken field is found before a token is needed.
const OPEN_VSX_NAME = /^[\w\-+$~]+$/;
const OPEN_VSX_VERSION_CHARS = /^[\p{L}\p{N}$+\-,.:;_]+$/u;
// Java's Character.getType CONTROL, FORMAT, UNASSIGNED, PRIVATE_USE, LINE_ and PARAGRAPH_SEPARATOR.
const OPEN_VSX_BAD_CHARS = /[\p{Cc}\p{Cf}\p{Cn}\p{Co}\p{Zl}\p{Zp}]/u;
const DEFAULT_STRING_SIZE = 255;

function isOpenVsxUrl(value) {
  try {
    return new URL(value.startsWith("git+") ? value.slice(4) : value).host !== "";
  } catch {
    return false;
  }
}

/** The issues Open VSX's server would refuse the manifest for. */
export function openVsxIssues(manifest) {
  const issues = [];
  for (const field of ["publisher", "name"]) {
    const value = manifest[field];
    if (typeof value !== "string" || !OPEN_VSX_NAME.test(value) || value.length > DEFAULT_STRING_SIZE) {
      issues.push(`${field} '${value}' is not a valid Open VSX name`);
    }
  }
  const version = manifest.version;
  if (typeof version !== "string" || !OPEN_VSX_VERSION_CHARS.test(version) || ["latest", "pre-release", "reviews"].includes(version)) {
    issues.push(`version '${version}' is not accepted by Open VSX`);
  }
  const text = (field, value, limit) => {
    if (value === undefined) return;
    if (typeof value !== "string") issues.push(`${field} must be a string`);
    else if (OPEN_VSX_BAD_CHARS.test(value)) issues.push(`${field} has a control or unassigned character`);
    else if (value.length > limit) issues.push(`${field} exceeds ${limit} characters`);
  };
  text("displayName", manifest.displayName, DEFAULT_STRING_SIZE);
  text("description", manifest.description, 2048);
  for (const category of manifest.categories ?? []) text("categories", category, DEFAULT_STRING_SIZE);
  for (const keyword of manifest.keywords ?? []) text("keywords", keyword, DEFAULT_STRING_SIZE);
  text("license", manifest.license, DEFAULT_STRING_SIZE);
  for (const [field, url] of [
    ["homepage", manifest.homepage],
    ["repository", urlOf(manifest.repository)],
    ["bugs", urlOf(manifest.bugs)],
  ]) {
    if (url === undefined) continue;
    if (typeof url !== "string" || !isOpenVsxUrl(url)) issues.push(`${field} is not a URL: ${url}`);
    else if (url.length > DEFAULT_STRING_SIZE) issues.push(`${field} exceeds ${DEFAULT_STRING_SIZE} characters`);
  }
  if (manifest.markdown !== undefined && !["github", "standard"].includes(manifest.markdown)) {
    issues.push(`markdown must be github or standard: ${manifest.markdown}`);
  }
  const banner = manifest.galleryBanner ?? {};
  text("galleryBanner.color", banner.color, 16);
  if (banner.theme !== undefined && !["dark", "light"].includes(banner.theme)) {
    issues.push(`galleryBanner.theme must be dark or light: ${banner.theme}`);
  }
  if (manifest.qna !== undefined && manifest.qna !== false && !["marketplace", "false"].includes(manifest.qna) && !isOpenVsxUrl(String(manifest.qna))) {
    issues.push(`qna must be marketplace, false or a URL: ${manifest.qna}`);
  }
  return issues;
}
