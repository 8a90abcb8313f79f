-- nvim_plain.lua: Neovim's built-in LSP client and no kiln plugin, against
-- the real kiln: validator diagnostics appear on a Python buffer, the code
-- actions are listed, and "Run document in kiln" runs through Neovim's own
-- code_action path (executeCommand), whose showMessage summary reaches
-- vim.notify and whose output document Neovim opens (showDocument).
-- Run: KILN_BIN=... nvim --headless --clean -u NONE -l nvim_plain.lua
-- Prints one "ok NAME" or "FAIL NAME: why" per check, then
-- "lsp-nvim: N passed, N failed".
local kiln = assert(os.getenv('KILN_BIN'), 'KILN_BIN not set')
local pass, fail = 0, 0
local function check(name, ok, why)
  if ok then
    pass = pass + 1
    print('ok ' .. name)
  else
    fail = fail + 1
    print('FAIL ' .. name .. ': ' .. tostring(why))
  end
end

-- Neovim's own window/showMessage handler shows the message; the test
-- records what it was given, then lets it.
local notes = {}
local show = vim.lsp.handlers['window/showMessage']
vim.lsp.handlers['window/showMessage'] = function(err, result, ctx, config)
  table.insert(notes, { msg = result.message, level = result.type })
  return show(err, result, ctx, config)
end

-- The folder is the run's workspace: when the tests run as root, the box
-- runs as nobody, who must be able to read it (Neovim's own tempname()
-- lives in a 0700 folder).
local dir = vim.fn.trim(vim.fn.system({ 'mktemp', '-d', '/tmp/kiln-lsp-XXXXXX' }))
vim.fn.setfperm(dir, 'rwxr-xr-x')
local file = dir .. '/plain.py'
vim.fn.writefile({ 'import socket', "print('from kiln')" }, file)
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
vim.bo[buf].filetype = 'python'

-- A document left by a server that is gone (pid past pid_max: never
-- running) is removed when the next one starts.
local rt = os.getenv('XDG_RUNTIME_DIR')
local odir = (rt and rt:sub(1, 1) == '/') and (rt .. '/kiln')
  or ('/tmp/kiln-' .. vim.fn.trim(vim.fn.system({ 'id', '-u' })))
vim.fn.mkdir(odir, 'p', 448)
local stale = odir .. '/run-r1-99999999.txt'
vim.fn.writefile({ 'old output' }, stale)

local client_id = vim.lsp.start({
  name = 'kiln',
  cmd = { kiln },
  root_dir = dir,
})
check('client started', client_id ~= nil, 'vim.lsp.start returned nil')
local client = vim.lsp.get_client_by_id(client_id)

-- Diagnostics, published after didOpen.
local got = vim.wait(10000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
local diags = vim.diagnostic.get(buf)
check('diagnostics shown', got and diags[1].lnum == 0 and diags[1].message:find('network') ~= nil,
  vim.inspect(diags))

-- The code actions the client lists at the cursor.
local res = client.request_sync('textDocument/codeAction', {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  range = { start = { line = 1, character = 0 }, ['end'] = { line = 1, character = 0 } },
  context = { diagnostics = {} },
}, 5000, buf)
local titles = {}
for _, a in ipairs((res and res.result) or {}) do
  table.insert(titles, a.title)
end
check('code actions listed', vim.tbl_contains(titles, 'Run document in kiln'), vim.inspect(res))

-- Fix the denied import, wait for the diagnostics to clear, then run.
vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'import json' })
got = vim.wait(10000, function()
  return #vim.diagnostic.get(buf) == 0
end, 50)
check('diagnostics cleared after the edit', got, vim.inspect(vim.diagnostic.get(buf)))

vim.lsp.buf.code_action({
  apply = true,
  filter = function(a)
    return a.title == 'Run document in kiln'
  end,
})
local summary
got = vim.wait(15000, function()
  for _, n in ipairs(notes) do
    if type(n.msg) == 'string' and n.msg:find('of the document %(python%) exited 0') then
      summary = n.msg
      return true
    end
  end
  return false
end, 50)
check('run summary shown (window/showMessage)', got, vim.inspect(notes))

local shown
got = vim.wait(5000, function()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name:match('run%-r%d+%-%d+%.txt$') then
      shown = b
      return true
    end
  end
  return false
end, 50)
local text = shown and table.concat(vim.api.nvim_buf_get_lines(shown, 0, -1, false), '\n') or ''
check('output document opened (window/showDocument)', got and text:find('from kiln') ~= nil,
  text)

check('a gone server\'s output document is removed at start', vim.fn.filereadable(stale) == 0,
  stale)

local doc = shown and vim.api.nvim_buf_get_name(shown) or ''
client.stop()
vim.wait(3000, function()
  return client.is_stopped()
end, 50)
got = vim.wait(5000, function()
  return doc ~= '' and vim.fn.filereadable(doc) == 0
end, 50)
check('the output document is removed when its server exits', got, doc)
print(string.format('lsp-nvim: %d passed, %d failed', pass, fail))
os.exit(fail == 0 and 0 or 1)
