-- plugin/kiln.lua: kiln's commands. Nothing starts until one is used; no
-- keys are mapped unless setup{ keymaps = { global = ... } } asks.
if vim.g.loaded_kiln then
  return
end
vim.g.loaded_kiln = true

local function kiln()
  return require('kiln')
end

local function range(o)
  if o.range and o.range > 0 then
    return o.line1, o.line2
  end
  return nil, nil
end

local cmd = vim.api.nvim_create_user_command

cmd('KilnIntent', function(o)
  local l1, l2 = range(o)
  kiln().intent({ text = o.args, line1 = l1, line2 = l2 })
end, { nargs = '*', range = true, desc = 'kiln: ask for code from plain words' })

cmd('KilnRun', function(o)
  local l1, l2 = range(o)
  kiln().run({ line1 = l1, line2 = l2 })
end, { range = true, desc = 'kiln: run the proposal, the selection or the buffer' })

cmd('KilnCancel', function() kiln().cancel() end, { desc = 'kiln: stop the run or intent' })

cmd('KilnValidate', function(o)
  local l1, l2 = range(o)
  kiln().validate({ line1 = l1, line2 = l2 })
end, { range = true, desc = 'kiln: validator diagnostics on the buffer' })

cmd('KilnAccept', function(o)
  if o.bang then kiln().accept_all() else kiln().accept() end
end, { bang = true, desc = 'kiln: accept the hunk (! all hunks)' })

cmd('KilnReject', function(o)
  if o.bang then kiln().reject_all() else kiln().reject() end
end, { bang = true, desc = 'kiln: reject the hunk (! all hunks)' })

cmd('KilnOutput', function() require('kiln.output').open() end, { desc = 'kiln: show the output window' })

cmd('KilnArtifact', function(o)
  require('kiln.run').open_artifact(tonumber(o.args) or 1)
end, { nargs = '?', desc = 'kiln: open an artifact of the last run' })

cmd('KilnHistory', function(o)
  if o.args == 'clear' then
    require('kiln.history').clear()
  else
    require('kiln.history').toggle()
  end
end, { nargs = '?', complete = function() return { 'clear' } end,
  desc = 'kiln: show or hide the history of the conversation (clear: forget it)' })

cmd('KilnChanges', function(o)
  local changes = require('kiln.changes')
  if o.args == 'apply' then
    changes.apply()
  elseif o.args == 'discard' then
    changes.discard()
  else
    changes.open()
  end
end, { nargs = '?', complete = function() return { 'apply', 'discard' } end,
  desc = "kiln: review, apply or discard the last run's workspace changes" })

cmd('KilnSessionReset', function() require('kiln.session').reset() end,
  { desc = 'kiln: forget what the Python session holds' })

cmd('KilnRestart', function() kiln().restart() end, { desc = 'kiln: restart the server' })
cmd('KilnStop', function() kiln().stop() end, { desc = 'kiln: stop the server' })

vim.api.nvim_create_autocmd('VimLeavePre', {
  group = vim.api.nvim_create_augroup('kiln', { clear = true }),
  callback = function()
    if package.loaded['kiln.client'] then
      require('kiln.client').stop_sync(1000)
    end
  end,
})
