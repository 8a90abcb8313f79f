-- kiln.doc: a buffer as the protocol sees it: TextDocumentItem, language,
-- selection ranges, and positions converted between the server's encoding
-- (UTF-8 or UTF-16 code units) and the byte columns the buffer API uses.
local client = require('kiln.client')
local compat = require('kiln.compat')

local M = {}

-- Neovim filetypes whose name is not kiln's: the filetype to the
-- canonical name of kiln's language registry (server/core/lang.c; see
-- docs/configuration.md, "Languages"). Every other filetype is sent as it
-- is: it is a canonical name or alias already (python, javascript), a
-- language the user's config adds (perl), or one kiln refuses with the
-- list of names it knows. zsh is not here: zsh code is not bash code.
local filetypes = {
  sh = 'bash',
  javascriptreact = 'javascript',
}

--- The language name sent for a filetype ('' means python).
function M.language_of_filetype(ft)
  if ft == nil or ft == '' then
    return 'python'
  end
  return filetypes[ft] or ft
end

function M.language(buf)
  return M.language_of_filetype(vim.bo[buf].filetype)
end

function M.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

function M.text(buf)
  local text = table.concat(M.lines(buf), '\n')
  if vim.bo[buf].eol then
    text = text .. '\n'
  end
  return text
end

--- The version sent with a document: the buffer's changedtick, which moves
--- on every change, so a proposal for an older one is recognisably stale.
function M.version(buf)
  return vim.api.nvim_buf_get_var(buf, 'changedtick')
end

function M.item(buf)
  return {
    uri = vim.uri_from_bufnr(buf),
    languageId = M.language(buf),
    version = M.version(buf),
    text = M.text(buf),
  }
end

--- Byte column -> server column on line (0-based row).
function M.to_server_col(buf, row, col)
  if client.position_encoding() == 'utf-8' then
    return col
  end
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  return compat.utf16_index(line, math.min(col, #line))
end

--- Server column -> byte column, within lines (a list of strings, 0-based row).
function M.from_server_col(lines, row, col)
  local line = lines[row + 1] or ''
  if client.position_encoding() ~= 'utf-8' then
    local ok, b = pcall(compat.byte_index, line, col)
    col = ok and b or #line
  end
  return math.min(col, #line)
end

--- The LSP range of a command's line range (line1..line2, 1-based,
--- inclusive), whole lines: from the first line's start to the start of the
--- line after the last (or the end of the last line at the buffer's end).
function M.line_range(buf, line1, line2)
  local n = vim.api.nvim_buf_line_count(buf)
  local finish
  -- With a final newline, line n is the empty line after it: a valid end.
  if line2 < n or vim.bo[buf].eol then
    finish = { line = line2, character = 0 }
  else
    local last = vim.api.nvim_buf_get_lines(buf, line2 - 1, line2, false)[1] or ''
    finish = { line = line2 - 1, character = M.to_server_col(buf, line2 - 1, #last) }
  end
  return { start = { line = line1 - 1, character = 0 }, ['end'] = finish }
end

--- Text of lines line1..line2 (1-based, inclusive) with a final newline.
function M.range_text(buf, line1, line2)
  return table.concat(vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false), '\n') .. '\n'
end

return M
