-- kiln.config: the options setup{} accepts, their defaults, and the
-- initializationOptions built from them. doc/kiln.txt documents each one.
local M = {}

M.defaults = {
  -- The command that starts the server, as in nvim-lspconfig.
  cmd = { 'kiln' },
  -- Extra environment for the server process (nil: Neovim's own).
  cmd_env = nil,
  -- The model, sent as initializationOptions.llm: provider ('ollama' or
  -- 'openai'), url, model, apiKey. Empty: the server's config file,
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
  -- How long :KilnValidate and startup wait for the server (ms).
  timeout_ms = 10000,
  -- Messages through vim.notify at this level and above.
  log_level = vim.log.levels.INFO,
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
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
      io[k] = o[k]
    end
  end
  return vim.tbl_deep_extend('force', io, o.init_options or {})
end

return M
