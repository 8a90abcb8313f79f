-- kiln.output: the output window. One scratch buffer per Neovim instance
-- (kiln://output) that runs stream into: stdout and stderr in the order they
-- arrive (stderr highlighted), then the exit status, duration and artifacts.
local compat = require('kiln.compat')
local config = require('kiln.config')

local M = {}

local ns = vim.api.nvim_create_namespace('kiln.output')
local buf = nil
-- The stream whose line is still open (a chunk ended without a newline).
local open_stream = nil

function M.buf()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, 'kiln://output')
  compat.set_buf(buf, { buftype = 'nofile', bufhidden = 'hide', swapfile = false, filetype = 'kiln-output' })
  return buf
end

function M.win()
  local b = M.buf()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b then
      return w
    end
  end
  return nil
end

--- Show the output window (without moving the cursor into it).
function M.open()
  local w = M.win()
  if w then
    return w
  end
  local cur = vim.api.nvim_get_current_win()
  local o = config.options.output
  vim.cmd(('%s %dsplit'):format(o.position or 'botright', o.height or 12))
  w = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(w, M.buf())
  compat.set_win(w, { number = false, relativenumber = false, wrap = true, winfixheight = true })
  if vim.api.nvim_win_is_valid(cur) then
    vim.api.nvim_set_current_win(cur)
  end
  return w
end

local function set_lines(first, last, lines)
  local b = M.buf()
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, first, last, false, lines)
  vim.bo[b].modifiable = false
end

local function follow()
  local w = M.win()
  if w then
    local n = vim.api.nvim_buf_line_count(M.buf())
    pcall(vim.api.nvim_win_set_cursor, w, { n, 0 })
  end
end

--- Start a fresh output with a header line.
function M.clear(header)
  open_stream = nil
  set_lines(0, -1, { header })
  vim.api.nvim_buf_clear_namespace(M.buf(), ns, 0, -1)
  vim.api.nvim_buf_add_highlight(M.buf(), ns, 'Title', 0, 0, -1)
end

--- A line of kiln's own (attempt headers, status), highlighted.
function M.note(text, hl)
  local b = M.buf()
  open_stream = nil
  local n = vim.api.nvim_buf_line_count(b)
  set_lines(n, n, { text })
  vim.api.nvim_buf_add_highlight(b, ns, hl or 'Comment', n, 0, -1)
  follow()
end

--- Append a chunk of a stream ('stdout', 'stderr', or 'explain' for the
--- model's explanation) as it arrived.
function M.append(stream, text)
  if text == nil or text == '' then
    return
  end
  local b = M.buf()
  local pieces = vim.split(text, '\n', { plain = true })
  local n = vim.api.nvim_buf_line_count(b)
  local first_row
  if open_stream == stream then
    -- Continue the open line of this stream.
    local last = vim.api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ''
    pieces[1] = last .. pieces[1]
    first_row = n - 1
  else
    first_row = n
  end
  -- A chunk ending in a newline leaves nothing open.
  local ends_open = pieces[#pieces] ~= ''
  if not ends_open then
    table.remove(pieces)
  end
  if #pieces > 0 then
    set_lines(first_row, n, pieces)
    local hl = stream == 'stderr' and 'ErrorMsg' or stream == 'explain' and 'Comment' or nil
    if hl then
      for i = 0, #pieces - 1 do
        vim.api.nvim_buf_add_highlight(b, ns, hl, first_row + i, 0, -1)
      end
    end
  end
  open_stream = ends_open and stream or nil
  local max = config.options.output.max_lines or 10000
  local total = vim.api.nvim_buf_line_count(b)
  if total > max then
    set_lines(1, 1 + total - max, {})
  end
  follow()
end

--- The output as lines (for tests and :KilnOutput users).
function M.lines()
  return vim.api.nvim_buf_get_lines(M.buf(), 0, -1, false)
end

return M
