-- kiln.config: the options setup{} accepts, their defaults, and the
-- initializationOptions built from them. doc/kiln.txt documents each one.
local M = {}

M.defaults = {
  -- The command that starts the server, as in nvim-lspconfig.
  cmd = { 'kiln' },
  -- Extra environment for the server process (nil: Neovim's own).
  cmd_env = nil,
  -- The model, sent as initializationOptions.llm: every member the
  -- server's llm section has (provider 'ollama', 'openai' (and its
  -- aliases), 'anthropic' or 'bedrock'; url, model, region, temperature,
  -- maxTokens, cache, ...: kiln's docs/configuration.md), and three of
  -- the plugin's own, never sent there: api_key_cmd (a command whose
  -- output is the API key, e.g. { 'pass', 'show', 'anthropic' }),
  -- api_key_env (the environment variable that holds it) and profile
  -- (Bedrock's AWS profile, AWS_PROFILE for the server). The key goes to
  -- the server in its environment (KILN_API_KEY), never in this table or
  -- in initializationOptions. Empty: the server's config file,
  -- environment and defaults decide.
  llm = {},
  -- initializationOptions.validator (profile, ...) and .sandbox (limits).
  validator = {},
  sandbox = {},
  -- Anything else for initializationOptions, merged last.
  init_options = {},
  -- How a proposal is shown: 'inline' (in the buffer) or 'split' (a
  -- side-by-side diff window).
  diff_style = 'inline',
  -- Repair attempts after a failed run of a proposal (0: none).
  repair_attempts = 0,
  -- Automatic repair: a repair the validator allows runs at once (sent as
  -- intent/approve's repair.auto). Off: every repair is a new proposal,
  -- shown for review, that :KilnRun approves (unless the server's
  -- intent.autoRepair is true).
  auto_repair = false,
  -- After a successful run of a proposal, ask the model to explain the
  -- result (streamed into the output window).
  explain = false,
  -- The output window: where it opens, its height, the lines it keeps, and
  -- where artifacts and displays are saved (nil: stdpath('cache')/kiln/runs).
  output = { position = 'botright', height = 12, max_lines = 10000, save_dir = nil },
  -- What opens an artifact or a display (:KilnArtifact): nil for
  -- vim.ui.open where it exists (0.10), else xdg-open (open on macOS); or a
  -- command list (the path is added), or a function(path).
  open_cmd = nil,
  -- Python runs and intents in one live session (session/open): names
  -- persist between runs, and values, tables and figures come back as
  -- displays.
  session = false,
  -- Keys. `review` are buffer-local while a proposal is under review;
  -- `global` maps nothing unless set (e.g. { intent = '<leader>ki' }).
  keymaps = {
    review = {
      accept = 'ga', reject = 'gr', accept_all = 'gA', reject_all = 'gR',
      next = ']h', prev = '[h', help = 'g?',
    },
    global = {},
  },
  -- After :KilnValidate of a whole buffer, validate it again on every
  -- change, validate_debounce_ms after the last one.
  validate_on_change = false,
  validate_debounce_ms = 500,
  -- How long status() says "kiln: done (exit 0, 48 ms)" after a run (ms;
  -- 0: never, the status goes back to '' at once).
  status_done_ms = 5000,
  -- How long :KilnValidate and startup wait for the server (ms).
  timeout_ms = 10000,
  -- Messages through vim.notify at this level and above.
  log_level = vim.log.levels.INFO,
}

M.options = vim.deepcopy(M.defaults)

-- A key written into setup{}'s llm.apiKey: taken out of the options (so
-- that nothing that shows them shows it), kept here, sent as the others.
local literal_key = nil

-- The plugin's own members of llm: how to find the key, and the profile.
local client_only = { api_key_cmd = true, api_key_env = true, profile = true, apiKey = true }

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  literal_key = nil
  local llm = M.options.llm
  if type(llm) == 'table' and llm.apiKey ~= nil then
    literal_key = llm.apiKey
    llm.apiKey = nil
    vim.notify('kiln: llm.apiKey in setup{} is kept out of the options and sent in the server\'s ' ..
      'environment; better, set llm.api_key_cmd (e.g. { "pass", "show", "kiln" }) or llm.api_key_env',
      vim.log.levels.WARN)
  end
  if type(M.options.cmd) == 'string' then
    M.options.cmd = { M.options.cmd }
  end
  if M.options.diff_style ~= 'inline' and M.options.diff_style ~= 'split' then
    vim.notify("kiln: diff_style must be 'inline' or 'split'; using 'inline'", vim.log.levels.WARN)
    M.options.diff_style = 'inline'
  end
  return M.options
end

--- initializationOptions: only sections the user set, so the server's
--- config file keeps its say over the rest.
function M.init_options()
  local o = M.options
  local io = {}
  for _, k in ipairs({ 'llm', 'validator', 'sandbox' }) do
    if type(o[k]) == 'table' and next(o[k]) ~= nil then
      io[k] = vim.deepcopy(o[k])
    end
  end
  if io.llm then
    for k in pairs(client_only) do
      io.llm[k] = nil
    end
    if next(io.llm) == nil then
      io.llm = nil
    end
  end
  io = vim.tbl_deep_extend('force', io, o.init_options or {})
  -- A key never travels in initializationOptions (Neovim's LSP log has
  -- them): it goes in the environment.
  if type(io.llm) == 'table' then
    io.llm.apiKey = nil
  end
  return io
end

--- Where the API key comes from, for :checkhealth (never the key):
--- 'api_key_cmd `pass show x`', 'api_key_env MY_KEY', 'setup{} llm.apiKey',
--- or nil (the server's own environment and config file decide).
function M.key_source()
  local llm = type(M.options.llm) == 'table' and M.options.llm or {}
  local c = llm.api_key_cmd
  if c then
    return 'api_key_cmd `' .. (type(c) == 'table' and table.concat(c, ' ') or tostring(c)) .. '`'
  elseif llm.api_key_env then
    return 'api_key_env ' .. tostring(llm.api_key_env)
  elseif literal_key then
    return 'setup{} llm.apiKey'
  end
  return nil
end

--- The API key from api_key_cmd (its first line; a string is run by
--- 'shell'), api_key_env or a literal llm.apiKey; nil when none is set.
--- Returns nil, err when the command fails or the variable is empty.
local function api_key()
  local llm = type(M.options.llm) == 'table' and M.options.llm or {}
  if llm.api_key_cmd then
    local cmd = llm.api_key_cmd
    if type(cmd) == 'string' then
      cmd = { vim.o.shell, vim.o.shellcmdflag, cmd }
    end
    local r = require('kiln.compat').run(cmd, 10000)
    local key = vim.split(r.stdout or '', '\n', { plain = true })[1] or ''
    key = key:gsub('\r$', '')
    if r.code ~= 0 or key == '' then
      local why = vim.trim(r.stderr or '')
      return nil, ('llm.api_key_cmd %s (exit %s)%s: the server was not started'):format(
        r.code ~= 0 and 'failed' or 'printed no key', tostring(r.code),
        why ~= '' and (': ' .. require('kiln.text').visible(why:sub(1, 200))) or '')
    end
    return key
  elseif llm.api_key_env then
    local key = vim.env[llm.api_key_env]
    if not key or key == '' then
      return nil, ('llm.api_key_env names %s, which is not set: the server was not started'):format(
        tostring(llm.api_key_env))
    end
    return key
  end
  return literal_key
end

--- The server's environment: cmd_env, with the API key as KILN_API_KEY
--- and llm.profile as AWS_PROFILE. nil, err when the key cannot be had.
function M.server_env()
  local env = vim.deepcopy(M.options.cmd_env or {})
  local key, err = api_key()
  if err then
    return nil, err
  end
  if key then
    env.KILN_API_KEY = key
  end
  local llm = type(M.options.llm) == 'table' and M.options.llm or {}
  if llm.profile then
    env.AWS_PROFILE = tostring(llm.profile)
  end
  if next(env) == nil then
    return nil
  end
  return env
end

return M
