-- Server lifecycle, setup and :checkhealth, against the real build/kiln.
local h = _G.h

local function alive(pid)
  return vim.loop.kill(pid, 0) == 0
end

return {
  { 'lifecycle: the server starts on first use, once per instance', function()
    h.setup()
    local client = require('kiln.client')
    h.eq(nil, client.client(), 'a server before any command')
    local c = assert(client.ensure(10000))
    local c2 = assert(client.ensure(10000))
    h.eq(c.id, c2.id, 'the second use reuses the server')
    local n = 0
    for _, cl in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
      if cl.name == 'kiln' then
        n = n + 1
      end
    end
    h.eq(1, n, 'kiln clients')
    h.eq('kiln', client.server_info().name, 'serverInfo.name')
  end },

  { 'lifecycle: the server stops when Neovim exits', function()
    h.setup()
    local client = require('kiln.client')
    assert(client.ensure(10000))
    local pid = client.pid()
    h.ok(pid and alive(pid), 'server pid ' .. tostring(pid))
    vim.cmd('doautocmd VimLeavePre')
    h.wait(5000, function() return not alive(pid) end, 'the server process to end')
    h.eq(nil, client.client(), 'client after exit')
    h.eq(nil, h.message('exited'), 'a stop we asked for is not reported as a death')
  end },

  { 'lifecycle: a dead server is reported and restarted by the next command', function()
    h.setup()
    local client = require('kiln.client')
    assert(client.ensure(10000))
    local pid = client.pid()
    h.ok(pid, 'server pid')
    vim.loop.kill(pid, 9)
    h.wait(5000, function() return client.client() == nil end, 'the client to see the death')
    h.wait(2000, function() return h.message('exited') ~= nil end, 'the death to be reported')
    h.ok(h.message('signal 9'), 'the report names the signal')
    -- The next command starts a new server.
    require('kiln').validate({ on_done = function() end })
    h.wait(10000, function() return client.running() end, 'a new server')
    local pid2 = client.pid()
    h.ok(pid2 and pid2 ~= pid and alive(pid2), 'a different live server')
  end },

  { 'lifecycle: a missing server binary is reported with the fix', function()
    h.setup({ cmd = { '/nonexistent/kiln' } })
    local got
    require('kiln').validate({ on_done = function(err) got = err end })
    h.wait(2000, function() return got ~= nil end, 'the error')
    h.ok(tostring(got.message):find('cannot find the server'), 'message: ' .. tostring(got.message))
  end },

  { 'setup: options reach initializationOptions; defaults map no keys', function()
    h.setup({ llm = { model = 'm1' }, init_options = { validator = { profile = 'strict' } } })
    local io = require('kiln.config').init_options()
    h.eq({ llm = { model = 'm1' }, validator = { profile = 'strict' } }, io, 'initializationOptions')
    h.eq('', vim.fn.maparg('<leader>ki', 'n'), 'no global key mapped by default')
    h.setup({ keymaps = { global = { intent = '<leader>ki' } } })
    h.ok(vim.fn.maparg('<leader>ki', 'n'):find('KilnIntent'), 'a mapping when asked for')
    vim.keymap.del('n', '<leader>ki')
    vim.keymap.del('x', '<leader>ki')
  end },

  { 'health: :checkhealth kiln reports the server, its version and methods', function()
    h.setup({ llm = { url = 'http://127.0.0.1:9' } })
    vim.cmd('checkhealth kiln')
    local text = table.concat(h.lines(0), '\n')
    local version = vim.trim(vim.fn.system({ h.bin, '--version' }))
    h.ok(text:find(version, 1, true), 'version "' .. version .. '" in:\n' .. text)
    h.ok(text:find('the server starts', 1, true), 'server start in:\n' .. text)
    h.ok(text:find('model server does not answer', 1, true) and text:find('127.0.0.1:9', 1, true),
      'the model check in:\n' .. text)
    if require('kiln.client').supports('snippet/run') then
      h.ok(text:find('the sandbox runs code', 1, true) or text:find('sandbox does not work', 1, true),
        'a sandbox verdict in:\n' .. text)
    end
  end },

  { 'health: kiln/doctor items in :checkhealth kiln, a closed endpoint warned with its fix', function()
    h.setup({ llm = { provider = 'ollama', url = 'http://127.0.0.1:9/\27[31mred' } })
    h.need('kiln/doctor')
    vim.cmd('checkhealth kiln')
    local text = table.concat(h.lines(0), '\n')
    h.ok(text:find('kiln: this machine (kiln doctor)', 1, true), 'the section in:\n' .. text)
    for _, name in ipairs({ 'kernel: Linux', 'user namespaces: ', 'seccomp: ', 'Landlock: ', 'sandbox box: ',
      'cgroups: ', 'Python: ', 'Python modules: ', 'Node: ' }) do
      h.ok(text:find(name, 1, true), name .. ' in:\n' .. text)
    end
    -- The endpoint: a warning whose advice is the fix, its URL's escape shown, not sent.
    h.ok(text:find('model endpoint: ollama http://127.0.0.1:9/^[[31mred', 1, true), 'endpoint in:\n' .. text)
    h.ok(not text:find('\27', 1, true), 'no raw escape in:\n' .. text)
    h.ok(text:find('check llm.url and llm.provider', 1, true), 'the fix in:\n' .. text)
  end },

  { 'doc: doc/kiln.txt is a help file whose tags resolve', function()
    local dir = vim.fn.tempname()
    vim.fn.mkdir(dir .. '/doc', 'p')
    vim.fn.writefile(vim.fn.readfile(h.root .. '/doc/kiln.txt'), dir .. '/doc/kiln.txt')
    vim.cmd('helptags ' .. vim.fn.fnameescape(dir .. '/doc'))
    local tags = table.concat(vim.fn.readfile(dir .. '/doc/tags'), '\n')
    for _, t in ipairs({ 'kiln', 'kiln-setup', 'kiln-review', ':KilnIntent', ':KilnRun', ':KilnCancel',
      ':KilnValidate', 'kiln-health', 'kiln-option-cmd' }) do
      h.ok(tags:find('\n' .. vim.pesc(t) .. '\t') or tags:find('^' .. vim.pesc(t) .. '\t'), 'tag ' .. t)
    end
    vim.opt.rtp:prepend(dir)
    vim.cmd('help kiln-review')
    h.eq('help', vim.bo.buftype, 'the help opens')
    vim.cmd('helpclose')
  end },

  { 'health: a missing server binary is an error with the fix', function()
    h.setup({ cmd = { '/nonexistent/kiln' } })
    vim.cmd('checkhealth kiln')
    local text = table.concat(h.lines(0), '\n')
    h.ok(text:find('server not found', 1, true), 'in:\n' .. text)
    h.ok(text:find('make', 1, true), 'the fix in:\n' .. text)
  end },

  { 'health: the model check names the model and what the server has', function()
    local url = h.fake_model()
    h.setup({ llm = { provider = 'ollama', url = url, model = 'fake-coder' } })
    h.need('intent/model')
    vim.cmd('checkhealth kiln')
    local text = table.concat(h.lines(0), '\n')
    h.ok(text:find('the model server answers: ollama at ' .. url .. ', model fake-coder', 1, true), 'in:\n' .. text)
    vim.cmd('bwipeout!')
    require('kiln.client').stop_sync()
    h.setup({ llm = { provider = 'ollama', url = url, model = 'no-such-model' } })
    vim.cmd('checkhealth kiln')
    text = table.concat(h.lines(0), '\n')
    h.ok(text:find('has no model no-such-model', 1, true), 'in:\n' .. text)
    h.ok(text:find('ollama pull no-such-model', 1, true), 'the fix in:\n' .. text)
  end },
}
