-- Headless Neovim 0.7 as a second real LSP client (driven by test_neovim.py).
-- FX_LSP_PYTHON: the interpreter running `-m fx_lsp serve`; FX_LSP_ROOT: the workspace;
-- FX_LSP_HOVER: "line,character" (0-based) to hover once diagnostics are in.
local function finish(result)
  io.stdout:write(vim.fn.json_encode(result) .. "\n")
  vim.cmd("qall!")
end

local function run()
  local bufnr = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "fx-lsp",
    cmd = { os.getenv("FX_LSP_PYTHON"), "-m", "fx_lsp", "serve" },
    root_dir = os.getenv("FX_LSP_ROOT"),
    init_options = { fxLsp = { run = "onSave" } },
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  local ok = vim.wait(60000, function()
    return #vim.diagnostic.get(bufnr) > 0
  end, 100)
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(diagnostics, {
      lnum = d.lnum, col = d.col, end_col = d.end_col, severity = d.severity,
      message = d.message, source = d.source, code = d.code,
    })
  end
  local line, character = os.getenv("FX_LSP_HOVER"):match("(%d+),(%d+)")
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    position = { line = tonumber(line), character = tonumber(character) },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 10000) or {}
  local hover = nil
  for _, response in pairs(responses) do
    if response.result and response.result.contents then
      hover = response.result.contents.value
    end
  end
  -- Neovim 0.7 offers no notebook support: the server declares no notebook sync to it.
  local notebook_sync = vim.lsp.get_client_by_id(client_id).server_capabilities.notebookDocumentSync
  vim.lsp.get_client_by_id(client_id).stop()
  vim.wait(5000, function()
    return vim.lsp.get_client_by_id(client_id) == nil
  end, 100)
  finish({ ok = ok, diagnostics = diagnostics, hover = hover, notebook_sync = notebook_sync ~= nil })
end

vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    vim.schedule(run)
  end,
})
