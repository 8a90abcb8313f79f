-- kiln.output: the output window. One scratch buffer per Neovim instance
-- (kiln://output) that runs stream into: stdout and stderr in the order they
-- arrive (stderr highlighted), then the exit status, duration, artifacts and
-- displays. Each run opens a section under its own header line; earlier
-- runs stay above it (up to output.max_lines, with a marker line saying how
-- many lines were dropped). A window follows new output only while its
-- cursor is on the last line, as :terminal does.
local compat = require('kiln.compat')
local config = require('kiln.config')
local scratch = require('kiln.scratch')

local M = {}

local ns = vim.api.nvim_create_namespace('kiln.output')
-- Marks that move with the text: the current section's header, and the
-- traceback links (kiln.run puts them).
M.mark_ns = vim.api.nvim_create_namespace('kiln.output.marks')
local buf = nil
-- The stream whose line is still open (a chunk ended without a newline).
local open_stream = nil
-- Lines dropped by the cap since the buffer was made; the marker line
-- (row 0) says so while it is non-zero.
M.dropped = 0
local section_mark = nil

function M.buf()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = scratch.buf('kiln://output', { filetype = 'kiln-output', modifiable = false })
  M.dropped, section_mark, open_stream = 0, nil, nil
  vim.keymap.set('n', '<CR>', function() M.jump() end,
    { buffer = buf, desc = 'kiln: jump to the buffer line of this traceback line' })
  return buf
end

function M.win()
  return scratch.win(M.buf())
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
  -- The window's own status line says what the run is doing (queued,
  -- running, done), with no status line set up by the user.
  vim.wo[w].statusline = "kiln://output%=%{luaeval(\"require('kiln').status()\")} "

  -- A new window starts at the end, and so follows the output.
  pcall(vim.api.nvim_win_set_cursor, w, { vim.api.nvim_buf_line_count(M.buf()), 0 })
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

-- The windows whose cursor is on the last line: they follow what comes.
local function followers()
  local b = M.buf()
  local n = vim.api.nvim_buf_line_count(b)
  local ws = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b and vim.api.nvim_win_get_cursor(w)[1] >= n then
      table.insert(ws, w)
    end
  end
  return ws
end

local function follow(ws)
  local n = vim.api.nvim_buf_line_count(M.buf())
  for _, w in ipairs(ws) do
    if vim.api.nvim_win_is_valid(w) then
      pcall(vim.api.nvim_win_set_cursor, w, { n, 0 })
    end
  end
end

local function marker_text()
  return ('[%d earlier line%s dropped (output.max_lines = %d)]'):format(M.dropped,
    M.dropped == 1 and '' or 's', config.options.output.max_lines or 10000)
end

-- Keep at most output.max_lines lines (the marker included), dropping
-- the oldest and counting them on the marker line.
local function cap()
  local b = M.buf()
  local max = math.max(config.options.output.max_lines or 10000, 2)
  local total = vim.api.nvim_buf_line_count(b)
  if total <= max then
    return
  end
  if M.dropped == 0 then
    -- Make room for the marker too.
    local excess = total - max + 1
    set_lines(0, excess, { '' })
    M.dropped = excess
  else
    local excess = total - max
    set_lines(1, 1 + excess, {})
    M.dropped = M.dropped + excess
  end
  set_lines(0, 1, { marker_text() })
  vim.api.nvim_buf_clear_namespace(b, ns, 0, 1)
  vim.api.nvim_buf_add_highlight(b, ns, 'WarningMsg', 0, 0, -1)
end

--- Start a run's section with a header line, below the earlier runs.
function M.clear(header)
  local b = M.buf()
  local ws = followers()
  open_stream = nil
  local n = vim.api.nvim_buf_line_count(b)
  local first = vim.api.nvim_buf_get_lines(b, 0, 1, false)[1]
  local row
  if n == 1 and first == '' then
    set_lines(0, 1, { header })
    row = 0
  else
    set_lines(n, n, { '', header })
    row = n + 1
  end
  vim.api.nvim_buf_add_highlight(b, ns, 'Title', row, 0, -1)
  section_mark = vim.api.nvim_buf_set_extmark(b, M.mark_ns, row, 0, {})
  cap()
  follow(ws)
end
M.start = M.clear

--- A line of kiln's own (attempt headers, status), highlighted.
function M.note(text, hl)
  M.lines_note({ text }, hl)
end

--- Lines of kiln's own, each highlighted with hl.
function M.lines_note(lines, hl)
  for _, l in ipairs(lines) do
    require('kiln.history').record_note(l)
  end
  local b = M.buf()
  local ws = followers()
  open_stream = nil
  local n = vim.api.nvim_buf_line_count(b)
  set_lines(n, n, lines)
  for i = 0, #lines - 1 do
    vim.api.nvim_buf_add_highlight(b, ns, hl or 'Comment', n + i, 0, -1)
  end
  cap()
  follow(ws)
  return n
end

--- Append a chunk of a stream ('stdout', 'stderr', or 'explain' for the
--- model's explanation) as it arrived. Returns the first row it wrote (0-based).
function M.append(stream, text)
  if text == nil or text == '' then
    return nil
  end
  -- The history keeps every run's output (this window drops old lines).
  require('kiln.history').record_output(text)
  local b = M.buf()
  local ws = followers()
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
  local before = vim.api.nvim_buf_line_count(b)
  cap()
  follow(ws)
  return first_row - (before - vim.api.nvim_buf_line_count(b)), #pieces
end

--- The output as lines (for tests and :KilnOutput users).
function M.lines()
  return vim.api.nvim_buf_get_lines(M.buf(), 0, -1, false)
end

--- The current (or last) run's section: its header and what followed.
function M.section_lines()
  local b = M.buf()
  local row = 0
  if section_mark then
    local pos = vim.api.nvim_buf_get_extmark_by_id(b, M.mark_ns, section_mark, {})
    row = pos[1] or 0
  end
  return vim.api.nvim_buf_get_lines(b, row, -1, false)
end

-- Jump targets by extmark id (kiln.run's traceback links): { buf, lnum }.
M.links = {}

--- Link output row (0-based) to line lnum of buffer target: <CR> on it
--- jumps there; label is shown at the end of the line.
function M.link(row, target, lnum, label)
  local id = vim.api.nvim_buf_set_extmark(M.buf(), M.mark_ns, row, 0, {
    virt_text = { { label, 'Directory' } },
  })
  M.links[id] = { buf = target, lnum = lnum }
  return id
end

--- <CR> in the output window: go to the buffer line the traceback line
--- under the cursor names.
function M.jump(row)
  local b = M.buf()
  row = row or (vim.api.nvim_win_get_cursor(0)[1] - 1)
  local marks = vim.api.nvim_buf_get_extmarks(b, M.mark_ns, { row, 0 }, { row, -1 }, {})
  for _, m in ipairs(marks) do
    local t = M.links[m[1]]
    if t and vim.api.nvim_buf_is_valid(t.buf) then
      local w = vim.fn.bufwinid(t.buf)
      if w == -1 then
        vim.cmd('wincmd p')
        vim.api.nvim_win_set_buf(0, t.buf)
        w = vim.api.nvim_get_current_win()
      end
      vim.api.nvim_set_current_win(w)
      pcall(vim.api.nvim_win_set_cursor, w, { math.min(t.lnum, vim.api.nvim_buf_line_count(t.buf)), 0 })
      return true
    end
  end
  return false
end

return M
