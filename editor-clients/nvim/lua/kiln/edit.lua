-- kiln.edit: a proposal's edit as line hunks. The server's WorkspaceEdit is
-- applied to a snapshot of the buffer to get the proposed text, and
-- vim.diff splits the change into hunks that can be accepted or rejected
-- one by one, whatever way the server cut its edit.
local doc = require('kiln.doc')

local M = {}

-- Byte offset in text (lines joined by '\n') of an LSP position.
local function offset(lines, pos)
  local off = 0
  for i = 1, math.min(pos.line, #lines) do
    off = off + #lines[i] + 1
  end
  if pos.line >= #lines then
    return off
  end
  return off + doc.from_server_col(lines, pos.line, pos.character)
end

--- The TextEdits for uri in a WorkspaceEdit (documentChanges or changes).
function M.edits_for(edit, uri)
  if type(edit) ~= 'table' then
    return nil
  end
  for _, dc in ipairs(edit.documentChanges or {}) do
    if dc.edits and (dc.textDocument == nil or dc.textDocument.uri == uri or uri == nil) then
      return dc.edits, dc.textDocument and dc.textDocument.version
    end
  end
  if edit.changes then
    return edit.changes[uri] or select(2, next(edit.changes))
  end
  return nil
end

--- Apply TextEdits to lines (a list of strings); returns the new lines.
function M.apply(lines, edits)
  -- The document as the server saw it ends in a newline (doc.text).
  local text = table.concat(lines, '\n') .. '\n'
  local spans = {}
  for _, e in ipairs(edits) do
    table.insert(spans, { s = offset(lines, e.range.start), e = offset(lines, e.range['end']), t = e.newText or '' })
  end
  -- From the end backwards, so earlier offsets stay valid.
  table.sort(spans, function(a, b) return a.s > b.s end)
  for _, sp in ipairs(spans) do
    text = text:sub(1, sp.s) .. sp.t .. text:sub(sp.e + 1)
  end
  if text:sub(-1) == '\n' then
    text = text:sub(1, -2)
  end
  return vim.split(text, '\n', { plain = true })
end

--- Line hunks from old lines to new lines:
--- { a_start, a_count, b_start, b_count, lines } where, as in vim.diff, an
--- insertion (a_count 0) goes after line a_start (0: at the top).
function M.hunks(old, new)
  local a = table.concat(old, '\n') .. '\n'
  local b = table.concat(new, '\n') .. '\n'
  local idx = vim.diff(a, b, { result_type = 'indices', algorithm = 'histogram' })
  local out = {}
  for _, h in ipairs(idx) do
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    local ls = {}
    for i = sb, sb + cb - 1 do
      if cb > 0 then
        table.insert(ls, new[i])
      end
    end
    table.insert(out, { a_start = sa, a_count = ca, b_start = sb, b_count = cb, lines = ls, status = 'pending' })
  end
  return out
end

return M
