-- kiln.health: :checkhealth kiln. Is the server found and which version,
-- does it start and which methods does this build serve, does the sandbox
-- work on this machine (and the fix when not), does the model server answer.
local compat = require('kiln.compat')
local config = require('kiln.config')

local M = {}

-- A string from the server (a path, a URL, a config value) with its control
-- characters shown as ^X, never acted on by the health buffer.
local function visible(v)
  return (tostring(v or ''):gsub('%c', function(c)
    local b = c:byte()
    return b == 127 and '^?' or ('^' .. string.char(b + 64))
  end))
end

-- Through the server (intent/model): the model it would really ask, from
-- setup{}, its config file and the environment together.
local function check_model_server(h, client)
  local e, r = client.request_sync('intent/model', vim.empty_dict(), 8000)
  if e then
    h.warn('cannot check the model: ' .. tostring(e.message), { 'check llm in setup{} (:help kiln-option-llm)' })
    return
  end
  local what = ('%s at %s, model %s'):format(visible(r.provider), visible(r.url), visible(r.model))
  if not r.reachable then
    local msg = type(r.error) == 'table' and r.error.message or 'no answer'
    h.warn('the model server does not answer: ' .. what .. ': ' .. visible(msg),
      r.provider == 'ollama' and
      { 'start Ollama: `ollama serve`, then `ollama pull ' .. tostring(r.model) .. '`',
        'or set llm.url in setup{}' } or { 'check llm.url and llm.apiKey (or KILN_API_KEY)' })
  elseif r.modelAvailable == false then
    local names = type(r.models) == 'table' and table.concat(r.models, ', ') or '?'
    h.warn('the model server answers, but has no model ' .. tostring(r.model) .. ' (it has: ' .. names .. ')',
      r.provider == 'ollama' and { '`ollama pull ' .. tostring(r.model) .. '`', 'or set llm.model in setup{}' }
      or { 'set llm.model in setup{}' })
  else
    h.ok('the model server answers: ' .. what)
  end
end

local function check_model(h)
  local llm = config.options.llm or {}
  local provider = llm.provider or os.getenv('KILN_LLM_PROVIDER') or 'ollama'
  local url = llm.url or os.getenv('KILN_LLM_URL')
  local openai = provider ~= 'ollama'
  if not url then
    url = openai and 'https://api.openai.com' or 'http://localhost:11434'
  end
  url = url:gsub('/+$', ''):gsub('/v1$', '')
  local probe = openai and (url .. '/v1/models') or (url .. '/api/tags')
  if vim.fn.executable('curl') ~= 1 then
    h.info('model server: ' .. probe .. ' not checked (no curl on PATH)')
    return
  end
  local r = compat.run({ 'curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '-m', '3', probe }, 5000)
  local code = tonumber(r.stdout) or 0
  if r.code == 0 and code >= 200 and code < 300 then
    h.ok(('model server answers: %s (%s, model %s)'):format(url, provider, llm.model or 'default'))
  elseif r.code == 0 and (code == 401 or code == 403) then
    h.warn(('model server %s answers %d: the API key is missing or wrong'):format(url, code),
      { 'set llm.apiKey in setup{} or KILN_API_KEY' })
  else
    local why = vim.trim(r.stderr ~= '' and r.stderr or ('HTTP ' .. code))
    h.warn(('model server does not answer: %s (%s)'):format(probe, why),
      openai and { 'check llm.url in setup{}' } or
      { 'start Ollama: `ollama serve`, then `ollama pull qwen2.5-coder`', 'or set llm.url in setup{}' })
  end
end

-- kiln/doctor: what the server can promise on this machine, item by item
-- (the report of `kiln doctor`), each with its exact fix.
local function check_doctor(h, client)
  local e, r = client.request_sync('kiln/doctor', vim.empty_dict(), 30000)
  if e or type(r) ~= 'table' or type(r.items) ~= 'table' then
    h.warn('kiln/doctor gave no report: ' .. visible(e and e.message or vim.inspect(r)))
    return
  end
  for _, it in ipairs(r.items) do
    local line = visible(it.name) .. ': ' .. visible(it.value)
    if it.detail then
      line = line .. ' (' .. visible(it.detail) .. ')'
    end
    local advice = it.fix and { visible(it.fix) } or nil
    if it.status == 'ok' then
      h.ok(line)
    elseif it.status == 'degraded' then
      h.warn(line, advice)
    else
      h.error(line, advice)
    end
  end
  if r.exitCode == 0 then
    h.ok('every promise holds')
  elseif r.exitCode == 2 then
    h.error('kiln cannot run code on this machine: fix the missing items above')
  end
end

function M.check()
  local h = compat.health()
  h.start('kiln')
  if vim.fn.has('nvim-0.7') == 1 then
    h.ok('Neovim ' .. tostring(vim.version().major) .. '.' .. tostring(vim.version().minor))
  else
    h.error('Neovim 0.7 or later is needed')
  end
  local cmd = config.options.cmd
  local exe = cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    h.error(("server not found: '%s'"):format(exe), {
      'build it: `make` in the kiln repository gives build/kiln',
      'put build/kiln on PATH, or set cmd = { "/path/to/kiln" } in setup{}',
    })
    return
  end
  local v = compat.run({ exe, '--version' }, 5000)
  if v.code == 0 then
    h.ok(('server: %s (%s)'):format(vim.trim(v.stdout), vim.fn.exepath(exe)))
  else
    h.error(('`%s --version` failed: %s'):format(exe, vim.trim(v.stderr)))
    return
  end

  local client = require('kiln.client')
  local c, err = client.ensure(config.options.timeout_ms)
  if not c then
    h.error('the server does not start: ' .. tostring(err))
    return
  end
  local methods = client.methods() or {}
  h.ok('the server starts; it serves: ' .. (#methods > 0 and table.concat(methods, ', ') or 'the lifecycle only'))
  if client.state.last_exit then
    local e = client.state.last_exit
    h.warn(('a server exited unexpectedly earlier (code %s, signal %s)'):format(tostring(e.code), tostring(e.signal)))
  end

  h.start('kiln: sandbox')
  if not client.supports('snippet/run') then
    h.warn('this server build has no snippet/run: the sandbox cannot be checked')
  else
    local out = {}
    local old = client.on('run/output', function(p)
      table.insert(out, type(p) == 'table' and (p.text or p.data) or '')
    end)
    local e, r = client.request_sync('snippet/run', { language = 'bash', code = 'echo kiln-ok\n' }, 15000)
    client.on('run/output', old)
    local text = table.concat(out)
    if not e and r and (r.exitCode == 0) and text:find('kiln-ok', 1, true) then
      h.ok('the sandbox runs code on this machine')
    else
      local why = e and (e.message or vim.inspect(e))
        or ('exit ' .. tostring(r and r.exitCode) .. ', output ' .. vim.inspect(text))
      local advice = {}
      local kind = e and type(e.data) == 'table' and e.data.kind
      if e and type(e.data) == 'table' and e.data.fix then
        table.insert(advice, e.data.fix)
      end
      table.insert(advice, 'unprivileged user namespaces must be allowed: `sysctl kernel.unprivileged_userns_clone=1`')
      table.insert(advice, 'on Ubuntu 23.10+: `sysctl kernel.apparmor_restrict_unprivileged_userns=0` '
        .. 'or an AppArmor profile for kiln')
      h.error('the sandbox does not work here: ' .. why .. (kind and (' [' .. kind .. ']') or ''), advice)
    end
  end

  if client.supports('kiln/doctor') then
    h.start('kiln: this machine (kiln doctor)')
    check_doctor(h, client)
  end

  h.start('kiln: model')
  local src = config.key_source()
  if src then
    -- Where the key comes from, never the key.
    h.ok('API key: from ' .. src .. ', given to the server in its environment (KILN_API_KEY)')
  else
    h.info('API key: none from setup{} (the server\'s environment or config file may have one; ' ..
      'set llm.api_key_cmd or llm.api_key_env to give one)')
  end
  if client.supports('intent/model') then
    check_model_server(h, client)
  else
    check_model(h)
  end

  h.start('kiln: opening artifacts and displays')
  local o = config.options.open_cmd
  if type(o) == 'function' then
    h.ok('open_cmd is a Lua function')
  elseif o ~= nil then
    local opener = type(o) == 'string' and o or o[1]
    if vim.fn.executable(opener) == 1 then
      h.ok('open_cmd: ' .. vim.fn.exepath(opener))
    else
      h.warn(("open_cmd '%s' is not an executable: artifacts are saved but :KilnArtifact cannot open them")
        :format(tostring(opener)), { 'set open_cmd in setup{} (:help kiln-option-open_cmd)' })
    end
  else
    local dflt = vim.fn.has('mac') == 1 and 'open' or 'xdg-open'
    if vim.fn.executable(dflt) == 1 then
      h.ok((vim.ui.open and 'vim.ui.open, with ' or '') .. dflt .. ': ' .. vim.fn.exepath(dflt))
    else
      h.warn(('no %s: artifacts are saved but :KilnArtifact cannot open them'):format(dflt),
        { 'install xdg-utils, or set open_cmd in setup{} (:help kiln-option-open_cmd)' })
    end
  end
end

return M
