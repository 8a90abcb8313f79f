-- kiln.history: the conversation, as a pane toggled by :KilnHistory
-- (kiln://history). One entry per request, in order: the intent, the
-- model's explanation, the verdict with the rules behind it, then each run
-- of it: the code that ran, each repair attempt with the code it changed,
-- the output, its displays and workspace changes (kiln's own lines about
-- them), and the run's ledger (time, CPU, peak memory; the model's tokens
-- with the proposal). Plain runs of a buffer are entries too. Text from
-- the model and the code is shown made visible (kiln.text). Entries live as
-- long as Neovim; nothing here is ever cleared by a later run. The
-- features call record_*(); this module never talks to the server.
local compat = require('kiln.compat')
local scratch = require('kiln.scratch')
local visible = require('kiln.text').visible

local M = {}

-- The entries: { n, kind = 'intent'|'run', title, proposal_ids = {},
-- items = { {kind, ...} } }, oldest first. `active` is the entry a run
-- in flight writes into.
M.entries = {}
local active = nil
local buf = nil

local function hbuf()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = scratch.buf('kiln://history', { filetype = 'kiln-history', modifiable = false })
  return buf
end

function M.win()
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return nil
  end
  return scratch.win(buf)
end

local function split_lines(text)
  local lines = vim.split((tostring(text):gsub('\n$', '')), '\n', { plain = true })
  return lines
end

local function add_block(out, prefix, text)
  for _, l in ipairs(split_lines(text)) do
    table.insert(out, prefix .. visible(l))
  end
end

-- The pane's text, from the entries.
function M.render_lines()
  local out = {}
  for _, e in ipairs(M.entries) do
    if #out > 0 then
      table.insert(out, '')
    end
    table.insert(out, ('#%d %s'):format(e.n, e.title))
    for _, it in ipairs(e.items) do
      if it.kind == 'proposal' then
        table.insert(out, ('  proposal %s, verdict %s'):format(visible(it.id), visible(it.verdict)))
        if it.tokens then
          table.insert(out, '  tokens: ' .. it.tokens)
        end
        if it.explanation and it.explanation ~= '' then
          table.insert(out, '  explanation:')
          add_block(out, '    ', it.explanation)
        end
        if #it.rules > 0 then
          table.insert(out, '  rules:')
          for _, r in ipairs(it.rules) do
            table.insert(out, '    ' .. visible(r))
          end
        end
        table.insert(out, '  code:')
        add_block(out, '    | ', it.code or '')
      elseif it.kind == 'error' then
        table.insert(out, '  error: ' .. it.text)
      elseif it.kind == 'ran' then
        table.insert(out, '  ran ' .. it.what .. ':')
        add_block(out, '    | ', it.code or '')
      elseif it.kind == 'output' then
        table.insert(out, '  output:')
        add_block(out, '    > ', it.text)
      elseif it.kind == 'note' then
        table.insert(out, '  ' .. visible(it.text))
      elseif it.kind == 'ledger' then
        table.insert(out, '  ledger: ' .. it.text)
      end
    end
  end
  return out
end

local function refresh()
  local b = hbuf()
  local w = M.win()
  local at_end = w and vim.api.nvim_win_get_cursor(w)[1] >= vim.api.nvim_buf_line_count(b)
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, M.render_lines())
  vim.bo[b].modifiable = false
  if at_end then
    pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(b), 0 })
  end
end

-- Called by the features after each change; the pane is redrawn later
-- in the same loop turn, once.
local scheduled = false
local function changed()
  if not scheduled then
    scheduled = true
    vim.schedule(function()
      scheduled = false
      refresh()
    end)
  end
end

local function new_entry(kind, title)
  local e = { n = #M.entries + 1, kind = kind, title = title, proposal_ids = {}, items = {} }
  table.insert(M.entries, e)
  changed()
  return e
end

local function by_proposal(id)
  for i = #M.entries, 1, -1 do
    if M.entries[i].proposal_ids[tostring(id)] then
      return M.entries[i]
    end
  end
  return nil
end

local function rules_of(proposal)
  local rules = {}
  for _, d in ipairs(type(proposal.diagnostics) == 'table' and proposal.diagnostics or {}) do
    local line = d.range and d.range.start and (d.range.start.line + 1) or nil
    table.insert(rules, ('%s%s%s'):format(d.code and d.code ~= vim.NIL and (tostring(d.code) .. ': ') or '',
      tostring(d.message or ''), line and (' (line ' .. line .. ')') or ''))
  end
  return rules
end

--- intent/run answered: the intent text and its proposal (or the error).
function M.record_intent(text, err, proposal)
  local e = new_entry('intent', 'intent: ' .. tostring(text))
  if err or type(proposal) ~= 'table' then
    table.insert(e.items, { kind = 'error', text = tostring(err and err.message or 'no proposal') })
    return e
  end
  e.proposal_ids[tostring(proposal.proposalId)] = true
  local expl = proposal.explanation
  local u = type(proposal.usage) == 'table' and proposal.usage or {}
  local tokens
  if tonumber(u.promptTokens) or tonumber(u.completionTokens) then
    tokens = ('%s prompt, %s completion%s'):format(tostring(tonumber(u.promptTokens) or '?'),
      tostring(tonumber(u.completionTokens) or '?'), proposal.cached == true and ' (cached answer)' or '')
  end
  table.insert(e.items, { kind = 'proposal', id = proposal.proposalId, verdict = proposal.verdict,
    explanation = type(expl) == 'string' and expl or nil, rules = rules_of(proposal), code = proposal.code,
    tokens = tokens })
  return e
end

local function mib(bytes)
  return ('%.1f MiB'):format(bytes / 1048576)
end

--- The ledger of a run (a snippet/run result, or intent/approve's last
--- run): wall time, CPU and peak memory as the server measured them
--- ("48 ms, CPU 31 ms, peak memory 7.9 MiB (largest process)"); nil when
--- it measured none of them.
function M.ledger_text(run)
  if type(run) ~= 'table' then
    return nil
  end
  local parts = {}
  local ms = tonumber(run.durationMs)
  if ms then
    table.insert(parts, ('%.0f ms'):format(ms))
  end
  local cpu = tonumber(run.cpuMs)
  if cpu then
    table.insert(parts, ('CPU %.0f ms'):format(cpu))
  end
  local cg = type(run.cgroup) == 'table' and run.cgroup or {}
  if tonumber(cg.memoryPeakBytes) then
    table.insert(parts, 'peak memory ' .. mib(cg.memoryPeakBytes) .. ' (whole box)')
  elseif tonumber(run.maxRssKb) then
    table.insert(parts, 'peak memory ' .. mib(run.maxRssKb * 1024) .. ' (largest process)')
  end
  if #parts == 0 then
    return nil
  end
  return table.concat(parts, ', ')
end

--- The run in flight ended with result run (and attempts runs of it).
function M.record_ledger(run, attempts)
  local text = M.ledger_text(run)
  if not active or not text then
    return
  end
  if tonumber(attempts) and attempts > 1 then
    text = text .. (' (the last of %d attempts)'):format(attempts)
  end
  table.insert(active.items, { kind = 'ledger', text = text })
  changed()
end

--- A run starts: of proposal id (intent/approve) or of code from a buffer.
function M.record_run(what, code, proposal_id)
  local e = proposal_id and by_proposal(proposal_id)
  if not e then
    e = new_entry('run', what)
  end
  local ran = { kind = 'ran', what = what, code = code }
  if proposal_id and not code then
    for _, it in ipairs(e.items) do
      if it.kind == 'proposal' and tostring(it.id) == tostring(proposal_id) then
        ran.code = it.code
      end
    end
  end
  table.insert(e.items, ran)
  active = e
  changed()
  return e
end

--- Output of the run in flight (stdout, stderr, a display's text).
function M.record_output(text)
  if not active or text == nil or text == '' then
    return
  end
  local last = active.items[#active.items]
  if last and last.kind == 'output' then
    last.text = last.text .. text
  else
    table.insert(active.items, { kind = 'output', text = text })
  end
  changed()
end

--- A repaired proposal (intent/attempt `repaired`) joins the entry of the
--- run in flight, so approving it later writes there too.
function M.record_proposal_id(id)
  if active and id then
    active.proposal_ids[tostring(id)] = true
  end
end

--- A line of kiln's own about the run (its end, an artifact, an error).
function M.record_note(text)
  if not active then
    return
  end
  table.insert(active.items, { kind = 'note', text = text })
  changed()
end

--- The run in flight ended (its last lines were noted already).
function M.record_end()
  active = nil
end

--- :KilnHistory: show the pane (at its end), or close it when shown.
function M.toggle()
  local w = M.win()
  if w then
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(w, true)
    end
    return nil
  end
  refresh()
  local cur = vim.api.nvim_get_current_win()
  vim.cmd('botright vsplit')
  w = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(w, hbuf())
  compat.set_win(w, { number = false, relativenumber = false, wrap = true })
  pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(hbuf()), 0 })
  vim.api.nvim_set_current_win(cur)
  return w
end

--- Forget every entry (:KilnHistory clear).
function M.clear()
  M.entries, active = {}, nil
  refresh()
end

--- The pane's lines as they are now (tests).
function M.lines()
  refresh()
  return vim.api.nvim_buf_get_lines(hbuf(), 0, -1, false)
end

return M
