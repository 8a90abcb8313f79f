-- kiln.scratch: the plugin's named scratch buffers (kiln://output,
-- kiln://history, kiln://preview, kiln://changes) and the window that shows
-- one, so that each feature makes and finds its buffer the same way.
local compat = require('kiln.compat')

local M = {}

--- A new unlisted scratch buffer named name (nofile, hidden when left, no
--- swap file), with the buffer options in opts set over those.
function M.buf(name, opts)
  local b = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, b, name)
  compat.set_buf(b, vim.tbl_extend('force', { buftype = 'nofile', bufhidden = 'hide', swapfile = false }, opts or {}))
  return b
end

--- The first window, in any tab page, that shows buffer b, or nil.
function M.win(b)
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b then
      return w
    end
  end
  return nil
end

return M
