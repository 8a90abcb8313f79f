-- kiln.text: text from code, models or programs made visible before it is
-- shown in a message, a prompt or a pane: every character a terminal would
-- act on or hide is written out, as the server's core/visible.c does for
-- the terminal front ends: C0 controls and DEL in caret notation (ESC is
-- "^[", a line feed "^J"), C1 controls, bidirectional controls and
-- invisible format characters as "<U+202E>", bytes that are not UTF-8 as
-- "\xFF". Neovim shows C0 controls as ^X in a buffer by itself, but not
-- bidirectional controls, and a message or prompt passes everything on.
local M = {}

-- Code points a terminal acts on or shows nothing for, past C0/C1/DEL.
local hidden_ranges = {
  { 0x00AD, 0x00AD }, { 0x061C, 0x061C }, { 0x180E, 0x180E }, { 0x200B, 0x200F },
  { 0x2028, 0x202E }, { 0x2060, 0x2064 }, { 0x2066, 0x206F }, { 0xFE00, 0xFE0F },
  { 0xFEFF, 0xFEFF }, { 0xFFF9, 0xFFFB }, { 0xE0000, 0xE007F },
}

local function hidden(cp)
  if cp >= 0x80 and cp <= 0x9F then
    return true
  end
  for _, r in ipairs(hidden_ranges) do
    if cp >= r[1] and cp <= r[2] then
      return true
    end
  end
  return false
end

-- The code point of the UTF-8 sequence at byte i of s and its length, or
-- nil when the bytes there are not UTF-8.
local function decode(s, i)
  local b = s:byte(i)
  local n, cp, min
  if b < 0x80 then
    return b, 1
  elseif b >= 0xC2 and b <= 0xDF then
    n, cp, min = 2, b - 0xC0, 0x80
  elseif b >= 0xE0 and b <= 0xEF then
    n, cp, min = 3, b - 0xE0, 0x800
  elseif b >= 0xF0 and b <= 0xF4 then
    n, cp, min = 4, b - 0xF0, 0x10000
  else
    return nil
  end
  for k = 1, n - 1 do
    local c = s:byte(i + k)
    if not c or c < 0x80 or c > 0xBF then
      return nil
    end
    cp = cp * 64 + (c - 0x80)
  end
  if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then
    return nil
  end
  return cp, n
end

--- s made visible (see the top of this file). keep_newlines keeps line
--- feeds as line breaks (for a block of several lines); tabs are kept.
function M.visible(s, keep_newlines)
  s = tostring(s == nil and '' or s)
  -- The common case, plain printable ASCII, costs one find.
  if not s:find('[%z\1-\8\11-\31\127\128-\255]') and (keep_newlines or not s:find('\n', 1, true)) then
    return s
  end
  local out, i = {}, 1
  while i <= #s do
    local cp, n = decode(s, i)
    if not cp then
      table.insert(out, ('\\x%02X'):format(s:byte(i)))
      i = i + 1
    else
      if cp == 10 and keep_newlines or cp == 9 then
        table.insert(out, s:sub(i, i))
      elseif cp < 32 then
        table.insert(out, '^' .. string.char(cp + 64))
      elseif cp == 127 then
        table.insert(out, '^?')
      elseif hidden(cp) then
        table.insert(out, ('<U+%04X>'):format(cp))
      else
        table.insert(out, s:sub(i, i + n - 1))
      end
      i = i + n
    end
  end
  return table.concat(out)
end

return M
