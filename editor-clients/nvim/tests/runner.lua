-- tests/runner.lua: runs one test file's tests inside a headless Neovim,
-- against the real kiln server. Started by tests/run.sh as
--   nvim --headless -u NONE -i NONE -n -c 'luafile tests/runner.lua'
-- with KILN_TEST_FILE (the test file), KILN_BIN (the server) and
-- KILN_TEST_OUT (where results go, one line a test: "ok NAME",
-- "FAIL NAME: why" or "skip NAME: why"). Every wait is bounded.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.rtp:prepend(root)
vim.cmd('runtime plugin/kiln.lua')
vim.o.swapfile = false
vim.o.hidden = true

local out = assert(io.open(assert(os.getenv('KILN_TEST_OUT')), 'a'))
local file = assert(os.getenv('KILN_TEST_FILE'))

local h = {}
_G.h = h
h.root = root
h.repo = vim.fn.fnamemodify(root, ':h:h')
h.bin = os.getenv('KILN_BIN') or (h.repo .. '/build/kiln')
h.messages = {}

-- Every message the plugin gives, for assertions.
vim.notify = function(msg, level)
  table.insert(h.messages, { msg = msg, level = level })
  io.stderr:write('  [notify] ' .. tostring(msg) .. '\n')
end

function h.skip(why)
  error({ skip = why }, 0)
end

function h.fail(why)
  error({ fail = why }, 0)
end

function h.wait(ms, cond, what)
  if not vim.wait(ms, cond, 10) then
    h.fail('timed out after ' .. ms .. ' ms waiting for ' .. what)
  end
end

function h.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    h.fail(('%s: want %s, got %s'):format(what, vim.inspect(want), vim.inspect(got)))
  end
end

function h.ok(cond, what)
  if not cond then
    h.fail(what)
  end
end

function h.message(pattern)
  for _, m in ipairs(h.messages) do
    if tostring(m.msg):find(pattern) then
      return m
    end
  end
  return nil
end

function h.setup(opts)
  require('kiln').setup(vim.tbl_deep_extend('force', { cmd = { h.bin }, timeout_ms = 10000 }, opts or {}))
end

--- Start the server and fail the test unless it serves method (every
--- method the plugin calls is in the build the tests run: a missing one is
--- a bug, not a reason to skip).
function h.need(method)
  local client = require('kiln.client')
  local c, err = client.ensure(10000)
  if not c then
    h.fail('server did not start: ' .. tostring(err))
  end
  if not client.supports(method) then
    h.fail('the server does not advertise ' .. method)
  end
end

--- A fresh scratch buffer with lines and filetype, current in one window.
function h.buffer(lines, ft)
  vim.cmd('silent! only')
  vim.cmd('enew!')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].filetype = ft or 'python'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  -- A clean undo history: undo must go back to exactly these lines.
  local ul = vim.bo[buf].undolevels
  vim.bo[buf].undolevels = -1
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, {})
  vim.bo[buf].undolevels = ul
  return buf
end

function h.lines(buf)
  return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false)
end

-- The fake model server (tests/fake-model), started once per test file.
local fake_job
function h.fake_model()
  if h.fake_url then
    return h.fake_url
  end
  local script = h.repo .. '/tests/fake-model/fake_model.py'
  if vim.fn.filereadable(script) ~= 1 then
    h.fail('no tests/fake-model/fake_model.py in the tree')
  end
  local port_file = vim.fn.tempname()
  fake_job = vim.fn.jobstart({ 'python3', script, '--port', '0', '--port-file', port_file,
    '--max-seconds', '300' })
  h.ok(fake_job > 0, 'cannot start the fake model server')
  h.wait(10000, function() return vim.fn.filereadable(port_file) == 1 end, 'the fake model port')
  local port = vim.trim(vim.fn.readfile(port_file)[1] or '')
  h.fake_url = 'http://127.0.0.1:' .. port
  return h.fake_url
end

--- The plugin set up against the fake model server with model (extra:
--- more options), and the server's intent/run checked.
function h.setup_model(model, extra)
  local url = h.fake_model()
  h.setup(vim.tbl_deep_extend('force', {
    llm = { provider = 'ollama', url = url, model = model },
  }, extra or {}))
  h.need('intent/run')
end

--- The fake model's 30-line program (fake-long), from the fake itself.
function h.long_program()
  local text = vim.fn.system({ 'python3', '-c',
    'import sys; sys.path.insert(0, sys.argv[1]); import fake_model; sys.stdout.write(fake_model.long_program())',
    h.repo .. '/tests/fake-model' })
  h.ok(vim.v.shell_error == 0, 'reading the fake program: ' .. text)
  local lines = vim.split(text, '\n', { plain = true })
  -- kiln's extraction drops the blank lines that end a code block.
  while lines[#lines] == '' do
    table.remove(lines)
  end
  return lines
end

--- Wait (up to ms, default 60 s) for the current run to end; returns
--- kiln.run's record of it.
function h.wait_run(ms)
  local run = require('kiln.run')
  h.wait(ms or 60000, function() return run.current == nil end, 'the run to end')
  return run.last
end

--- A file's bytes, or nil when it cannot be opened. Read here with io.open
--- on purpose, not with kiln.changes' reader: the tests check what the
--- plugin wrote, so they must not read it through the plugin's own code.
function h.read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- Write bytes s to path (io.open, not the plugin's own code).
function h.write_file(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

--- A project folder the sandbox's user (nobody, when the tests run as
--- root) can read, with data.txt and old.txt in it.
function h.project()
  local dir = ('/tmp/kiln-nvim-ws-%d-%d'):format(vim.fn.getpid(), math.random(1e9))
  vim.fn.mkdir(dir, 'p', tonumber('755', 8))
  vim.fn.setfperm(dir, 'rwxr-xr-x')
  h.write_file(dir .. '/data.txt', 'a\n')
  h.write_file(dir .. '/old.txt', 'x\n')
  -- As root the box runs as nobody, and the folder's owner's files are
  -- nobody's in the box (an idmapped mount, docs/sandbox.md): the files
  -- stay the user's, as a person's project has them.
  for _, f in ipairs({ 'data.txt', 'old.txt' }) do
    vim.fn.setfperm(dir .. '/' .. f, 'rw-r--r--')
  end
  return dir
end

--- fn(dir) with a fresh h.project() as the cwd (and so the server's
--- workspace, when fn starts it); the folder is removed after.
function h.in_project(fn)
  local dir = h.project()
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. vim.fn.fnameescape(dir))
  local ok, err = pcall(fn, dir)
  vim.cmd('cd ' .. vim.fn.fnameescape(cwd))
  vim.fn.delete(dir, 'rf')
  if not ok then
    error(err, 0)
  end
end

local ui_select = vim.ui.select

--- vim.ui.select answered with the first item that matches pattern (nil:
--- cancelled); returns what it was asked, a { prompt, items } a question.
--- Each test starts with Neovim's own vim.ui.select again.
function h.answer_select(pattern)
  local asked = {}
  vim.ui.select = function(items, opts, cb)
    table.insert(asked, { prompt = opts.prompt, items = items })
    for _, it in ipairs(items) do
      if pattern and it:find(pattern) then
        return cb(it)
      end
    end
    cb(nil)
  end
  return asked
end

-- Between tests: no server, no windows or buffers, no messages.
local function reset()
  pcall(function() require('kiln.client').stop_sync(3000) end)
  for _, m in ipairs({ 'kiln.run', 'kiln.intent' }) do
    local mod = package.loaded[m]
    if mod then
      mod.current = nil
      -- A run's "done" status of the last test is not this test's.
      mod.done = nil
      if mod.pending then
        mod.pending, mod.reviews, mod.proposals = {}, {}, {}
      end
    end
  end
  pcall(vim.cmd, 'silent! only')
  pcall(vim.cmd, 'enew!')
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if b ~= vim.api.nvim_get_current_buf() then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
  vim.diagnostic.reset()
  vim.ui.select = ui_select
  h.messages = {}
end

local tests = dofile(file)
local only = os.getenv('KILN_TEST_FILTER')
for _, t in ipairs(tests) do
  local name, fn = t[1], t[2]
  if not only or name:find(only, 1, true) then
    reset()
    local ok, err = xpcall(fn, function(e)
      if type(e) == 'table' then
        return e
      end
      return { fail = tostring(e) .. '\n' .. debug.traceback() }
    end)
    local line
    if ok then
      line = 'ok ' .. name
    elseif err.skip then
      line = 'skip ' .. name .. ': ' .. err.skip
    else
      line = 'FAIL ' .. name .. ': ' .. tostring(err.fail)
    end
    out:write(line .. '\n')
    out:flush()
  end
end
reset()
if fake_job then
  vim.fn.jobstop(fake_job)
end
out:close()
vim.cmd('qa!')
