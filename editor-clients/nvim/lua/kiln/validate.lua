-- kiln.validate: :KilnValidate, the validator's diagnostics on a buffer
-- through vim.diagnostic, and the LSP-to-vim.diagnostic conversion the
-- intent review uses for proposed code too.
local client = require('kiln.client')
local config = require('kiln.config')
local doc = require('kiln.doc')

local M = {}

M.ns = vim.api.nvim_create_namespace('kiln.validate')

--- LSP diagnostics (positions in code whose first line is buffer row
--- row0, in lines) to vim.diagnostic items.
function M.convert(diags, lines, row0)
  local out = {}
  row0 = row0 or 0
  for _, d in ipairs(diags or {}) do
    local r = d.range or { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } }
    local sl, el = r.start.line, r['end'].line
    table.insert(out, {
      lnum = row0 + sl,
      col = doc.from_server_col(lines, row0 + sl, r.start.character),
      end_lnum = row0 + el,
      end_col = doc.from_server_col(lines, row0 + el, r['end'].character),
      severity = d.severity or vim.diagnostic.severity.ERROR,
      message = d.message or '',
      source = d.source or 'kiln',
      code = d.code,
      user_data = { lsp = d },
    })
  end
  return out
end

-- Buffers re-validated on change (setup{ validate_on_change = true }):
-- { timer } by buffer, attached after their first whole-buffer validation.
local watched = {}

local function unwatch(buf)
  local w = watched[buf]
  if w then
    watched[buf] = nil
    pcall(function()
      w.timer:stop()
      w.timer:close()
    end)
  end
end

-- Validate buf again debounce_ms after its last change, quietly (the
-- signs and diagnostics say it; no message each time).
local function watch(buf)
  if watched[buf] or not config.options.validate_on_change then
    return
  end
  local w = { timer = (vim.uv or vim.loop).new_timer() }
  watched[buf] = w
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      if watched[buf] ~= w or not config.options.validate_on_change then
        unwatch(buf)
        return true -- detach
      end
      w.timer:stop()
      w.timer:start(config.options.validate_debounce_ms or 500, 0, vim.schedule_wrap(function()
        if watched[buf] == w and vim.api.nvim_buf_is_valid(buf) then
          w.count = (w.count or 0) + 1
          M.validate(buf, nil, nil, nil, true)
        end
      end))
    end,
    on_detach = function()
      if watched[buf] == w then
        unwatch(buf)
      end
    end,
  })
end

--- How many times buf was re-validated on change (tests, :checkhealth).
function M.revalidations(buf)
  return watched[buf] and watched[buf].count or 0
end

--- Validate buf (or lines line1..line2 of it). done(err, result) gets the
--- server's answer after the diagnostics are set. Returns the request id.
--- quiet: no message (a re-validation on change).
function M.validate(buf, line1, line2, done, quiet)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  local params = {
    textDocument = doc.item(buf),
    language = doc.language(buf),
  }
  local row0 = 0
  if line1 then
    params.range = doc.line_range(buf, line1, line2)
    params.code = doc.range_text(buf, line1, line2)
    row0 = line1 - 1
  else
    params.code = params.textDocument.text
  end
  return client.request('snippet/validate', params, function(err, result)
    if err then
      client.notify('validate: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif quiet and vim.api.nvim_buf_is_valid(buf) and doc.version(buf) ~= params.textDocument.version then
      -- Changed again while this was checked: the next re-validation
      -- has the text as it is now.
      return
    elseif vim.api.nvim_buf_is_valid(buf) then
      local items = M.convert(result and result.diagnostics, doc.lines(buf), row0)
      vim.diagnostic.set(M.ns, buf, items)
      local verdict = result and result.verdict or '?'
      if not quiet then
        client.notify(('validate: %s, %d diagnostic%s'):format(verdict, #items, #items == 1 and '' or 's'))
      end
      if not line1 then
        watch(buf)
      end
    end
    if done then
      done(err, result)
    end
  end)
end

return M
