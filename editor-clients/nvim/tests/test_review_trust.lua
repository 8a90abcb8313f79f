-- The review must match what runs (issue 18): after a repair the review
-- follows the repaired proposal; :KilnRun after a review runs what the user
-- kept; a denied proposal looks denied; edits away from hunks keep them;
-- the review's keys and messages. Driven through the plugin's commands and
-- keys against the real server and the fake model server.
local h = _G.h

local review_ns = vim.api.nvim_create_namespace('kiln.review')

-- :KilnIntent TEXT (with an optional range), waiting for its review.
local function intent_cmd(cmd, buf)
  local intent = require('kiln.intent')
  vim.cmd(cmd)
  h.wait(30000, function() return intent.pending[buf] == nil end, 'the proposal')
  local rv = intent.review(buf)
  h.ok(rv, 'a review: ' .. vim.inspect(h.messages))
  return rv
end

-- Each expected line is a Lua pattern matched against the whole line.
local function lines_match(want, got, what)
  for i = 1, math.max(#want, #got) do
    if not (want[i] and got[i] and got[i]:find('^' .. want[i] .. '$')) then
      h.fail(('%s, line %d: want %s, got %s\nall:\n%s'):format(what, i, vim.inspect(want[i]),
        vim.inspect(got[i]), table.concat(got, '\n')))
    end
  end
end

-- The virtual lines of the inline review, as text, row by row.
local function virt_text(buf)
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, review_ns, 0, -1, { details = true })) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      local s = ''
      for _, chunk in ipairs(vl) do
        s = s .. chunk[1]
      end
      table.insert(out, s)
    end
  end
  return out
end

local proposal_ns = vim.api.nvim_create_namespace('kiln.proposal')

local answer_select = h.answer_select

-- mine (a version of the fake-long program) in a buffer between '#
-- before' and '# after', under review of the fake's proposal for those
-- lines, which has three hunks. Returns the buffer and the review.
local function review_of(mine)
  local lines = { '# before' }
  vim.list_extend(lines, mine)
  table.insert(lines, '# after')
  local buf = h.buffer(lines)
  local rv = intent_cmd('2,' .. (#mine + 1) .. 'KilnIntent compute stats', buf)
  h.eq(3, #rv.hunks, 'three hunks')
  return buf, rv
end

-- The fake-long program with lines 2, 12 and the last changed by the
-- user, under review of its proposal (three hunks: those lines put
-- back). Returns the program, the buffer.
local function long_review()
  h.setup_model('fake-long')
  local want = h.long_program()
  local mine = vim.deepcopy(want)
  mine[2] = '# one'
  mine[12] = "print('kept line 12')"
  mine[#mine] = '# three'
  local buf = review_of(mine)
  return want, buf
end

-- The output window after :KilnRun of long_review's buffer with hunks 1
-- and 3 accepted and 2 rejected: range (a pattern) is the lines that ran,
-- printed what the kept line 12 printed.
local function kept_ran(range, printed)
  lines_match({
    'kiln run: lines ' .. range .. ' of %[buffer%] as you kept them %(proposal p1: hunks 1, 3 accepted; 2 rejected%)',
    printed,
    '4%.50 2%.87', '9%.00 5%.74', '13%.50 8%.62', '18%.00 11%.49',
    'median of means 11%.25',
    '%[exit 0, %d+ ms%]',
  }, require('kiln.output').lines(), 'the output window')
end

-- A three-hunk review decided with the review's keys, then :KilnRun, and
-- the run's output checked line by line. The model deletes a line of the
-- user's (hunk 1, which prints 'mine kept'), changes one (hunk 2) and adds
-- its last line (hunk 3, which prints the median). decisions is one letter
-- a hunk, 'a' (ga) or 'r' (gr), in order; hunk 2 is always accepted.
local function mixed_review(decisions)
  assert(decisions:sub(2, 2) == 'a')
  h.setup_model('fake-long')
  local want = h.long_program()
  local mine = vim.list_slice(want, 1, 3)
  table.insert(mine, "print('mine kept')")
  vim.list_extend(mine, vim.list_slice(want, 4, #want - 1))
  h.eq('data_0 = [x * 1 for x in range(10)]', mine[15], 'the line hunk 2 changes')
  mine[15] = 'data_0 = [x * 100 for x in range(10)]'
  h.ok(want[#want]:find("^print%('median of means'"), 'the line hunk 3 adds')
  local buf, rv = review_of(mine)
  h.eq({ 1, 1, 0 }, { rv.hunks[1].a_count, rv.hunks[2].a_count, rv.hunks[3].a_count },
    'a deletion, a change, an addition')
  h.eq({ 0, 1, 1 }, { #rv.hunks[1].lines, #rv.hunks[2].lines, #rv.hunks[3].lines }, 'their new lines')
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  local keep = { accepted = {}, rejected = {} }
  for i = 1, 3 do
    local d = decisions:sub(i, i)
    vim.cmd(d == 'a' and 'normal ga' or 'normal gr')
    table.insert(d == 'a' and keep.accepted or keep.rejected, tostring(i))
    if i < 3 then
      vim.cmd('normal ]h')
    end
  end
  h.eq(nil, require('kiln.intent').review(buf), 'the review ended')
  -- The buffer: each accepted hunk written, each rejected one not.
  local expect = { '# before' }
  vim.list_extend(expect, vim.list_slice(want, 1, 3))
  if decisions:sub(1, 1) == 'r' then
    table.insert(expect, "print('mine kept')")
  end
  vim.list_extend(expect, vim.list_slice(want, 4, #want - 1))
  if decisions:sub(3, 3) == 'a' then
    table.insert(expect, want[#want])
  end
  table.insert(expect, '# after')
  h.eq(expect, h.lines(buf), 'the buffer after the review')
  vim.cmd('KilnRun')
  h.wait_run()
  local header = ('kiln run: lines 2-%d of [buffer] as you kept them (proposal p1: %s %s accepted; %s rejected)')
    :format(#expect - 1, #keep.accepted == 1 and 'hunk' or 'hunks', table.concat(keep.accepted, ', '),
      table.concat(keep.rejected, ', '))
  local out = { (header:gsub('%p', '%%%0')) }
  if decisions:sub(1, 1) == 'r' then
    table.insert(out, 'mine kept')
  end
  vim.list_extend(out, { '4%.50 2%.87', '9%.00 5%.74', '13%.50 8%.62', '18%.00 11%.49' })
  if decisions:sub(3, 3) == 'a' then
    table.insert(out, 'median of means 11%.25')
  end
  table.insert(out, '%[exit 0, %d+ ms%]')
  lines_match(out, require('kiln.output').lines(), 'the output window (decisions ' .. decisions .. ')')
end

local WRONG = { 'total = 0', 'for n in range(3):', '    total += n', 'print(totl)' }
local RIGHT = { 'total = 0', 'for n in range(3):', '    total += n', 'print(total)' }

return {
  { 'trust: after an automatic repair the review holds, and ga writes, the code that ran', function()
    h.setup_model('fake-repair', { repair_attempts = 3, auto_repair = true })
    h.need('intent/approve')
    local buf = h.buffer({ '# the average' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local rv = intent_cmd('KilnIntent print the average of 3, 4 and 5', buf)
    h.eq(WRONG, rv.hunks[1].lines, 'the first proposal (it fails)')
    vim.cmd('KilnRun')
    h.wait_run()
    -- The traceback's own lines are the output helper's business: from its
    -- last line on, every line.
    local out = require('kiln.output').lines()
    lines_match({ 'kiln run: proposal p1.*', '%-%- attempt 1 running %-%-', 'Traceback.*' },
      { out[1], out[2], out[3] }, 'the output window')
    while out[1] and not out[1]:find('^NameError') do
      table.remove(out, 1)
    end
    lines_match({
      "NameError: name 'totl' is not defined.*",
      '%-%- attempt 1 ran: it exited with status 1 %-%-',
      '%-%- attempt 2 repairing %-%-',
      '%-%- attempt 2 repaired %(verdict allow%) %-%-',
      '  | total = 0', '  | for n in range%(3%):', '  |     total %+= n', '  | print%(total%)',
      '%-%- attempt 2 running %-%-',
      '3',
      '%-%- attempt 2 ran %-%-',
      '%[exit 0, %d+ ms%]',
    }, out, 'the output window')
    rv = require('kiln.intent').review(buf)
    h.ok(rv, 'a review is open')
    h.eq('p2', rv.proposal.proposalId, 'the review follows the repaired proposal')
    h.eq(1, #rv.hunks, 'one hunk')
    h.eq(RIGHT, rv.hunks[1].lines, 'the review holds the code that ran')
    lines_match({ 'kiln hunk 1/1.*', 'total = 0', 'for n in range%(3%):', '    total %+= n', 'print%(total%)' },
      virt_text(buf), 'the inline review')
    vim.cmd('normal ga')
    h.eq({ '# the average', unpack(RIGHT) }, h.lines(buf), 'ga wrote the code that ran')
    h.ok(h.message('review now shows p2'), 'the switch is reported')
  end },

  { 'trust: a repair after the proposal was accepted opens a review of the repaired code', function()
    h.setup_model('fake-repair', { repair_attempts = 3 })
    h.need('intent/approve')
    local buf = h.buffer({ '# sum' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    intent_cmd('KilnIntent sum 0..2', buf)
    vim.cmd('normal gA')
    h.eq({ '# sum', unpack(WRONG) }, h.lines(buf), 'the failing code written')
    vim.cmd('KilnRun')
    h.wait_run()
    local first = require('kiln.output').section_lines()
    h.ok(not vim.tbl_contains(first, '3'), 'the repair did not run unapproved:\n' .. table.concat(first, '\n'))
    local rv = require('kiln.intent').review(buf)
    h.ok(rv, 'a new review')
    h.eq(1, #rv.hunks, 'one hunk: the changed line')
    h.eq({ 'print(total)' }, rv.hunks[1].lines, 'the repaired line')
    vim.cmd('normal ga')
    h.eq({ '# sum', unpack(RIGHT) }, h.lines(buf), 'the buffer holds the code that ran')
    -- Now the buffer is the repaired proposal: :KilnRun approves it (p2).
    vim.cmd('KilnRun')
    h.wait_run()
    local out = require('kiln.output').section_lines()
    lines_match({ 'kiln run: proposal p2.*' }, { out[1] }, 'what runs')
    h.ok(vim.tbl_contains(out, '3'), 'p2 ran:\n' .. table.concat(out, '\n'))
  end },

  { 'trust: :KilnRun after a review runs what was kept, and says so', function()
    local want, buf = long_review()
    -- Accept 1, reject 2, accept 3, with the review's keys.
    vim.api.nvim_win_set_cursor(0, { 3, 0 })
    vim.cmd('normal ga')
    vim.cmd('normal ]h')
    h.eq(13, vim.api.nvim_win_get_cursor(0)[1], ']h goes to hunk 2')
    vim.cmd('normal gr')
    vim.cmd('normal ]h')
    vim.cmd('normal ga')
    local kept = vim.deepcopy(want)
    kept[12] = "print('kept line 12')"
    local expect = { '# before' }
    vim.list_extend(expect, kept)
    table.insert(expect, '# after')
    h.eq(expect, h.lines(buf), 'the buffer: hunks 1 and 3 written, 2 not')
    h.eq(nil, require('kiln.intent').review(buf), 'the review ended')
    vim.cmd('KilnRun')
    h.wait_run()
    kept_ran('2%-31', 'kept line 12')
    h.ok(h.message('^kiln: running lines 2%-31 of %[buffer%] as you kept them'), 'the plugin says what runs')
  end },

  -- Issue 36: what was rejected never runs, whether it adds a line of the
  -- model's or deletes one of the user's; what was accepted does.
  { 'trust: :KilnRun after rejecting an added hunk runs without its line', function()
    mixed_review('aar')
  end },

  { 'trust: :KilnRun after rejecting a deleted hunk runs the line the model removed', function()
    mixed_review('raa')
  end },

  { 'trust: :KilnRun after rejecting a deleted and an added hunk runs neither', function()
    mixed_review('rar')
  end },

  { 'trust: a denied proposal looks denied, keeps its diagnostics, and asks before it is written', function()
    h.setup_model('fake-deny')
    local buf = h.buffer({ '# fetch' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local rv = intent_cmd('KilnIntent fetch a page', buf)
    h.eq('deny', rv.proposal.verdict, 'verdict')
    local badge = {
      'DENIED by PY%-IMPORT%-NETWORK  kiln hunk 1/1 %(verdict deny%) .*',
      'import socket  <%- imports a network module: the sandbox has no network %[PY%-IMPORT%-NETWORK%].*',
      's = socket%.create_connection.*',
      'print%(s%)',
    }
    lines_match(badge, virt_text(buf), 'the badge and the proposed lines')
    local ds = vim.diagnostic.get(buf, { namespace = proposal_ns })
    h.ok(#ds > 0, 'diagnostics on the proposal')
    vim.cmd('KilnRun')
    h.eq(nil, require('kiln.run').current, 'nothing runs')
    lines_match(badge, virt_text(buf), 'the badge stays after the refused run')
    h.eq(#ds, #vim.diagnostic.get(buf, { namespace = proposal_ns }), 'the diagnostics stay')
    -- ga asks first; "no" writes nothing.
    local ui_select = vim.ui.select
    local asked = answer_select(nil)
    vim.cmd('normal ga')
    h.eq(1, #asked, 'asked once')
    h.ok(asked[1].prompt:find('denied this proposal (PY-IMPORT-NETWORK', 1, true),
      'the question names the rule: ' .. asked[1].prompt)
    h.eq({ '# fetch' }, h.lines(buf), 'nothing written on "no"')
    h.ok(require('kiln.intent').review(buf), 'still under review')
    -- "yes" writes it, and its diagnostics go onto the written lines.
    answer_select('^Write')
    vim.cmd('normal ga')
    vim.ui.select = ui_select
    h.eq({ '# fetch', 'import socket', "s = socket.create_connection(('example.com', 80))", 'print(s)' },
      h.lines(buf), 'written on "yes"')
    ds = vim.diagnostic.get(buf, { namespace = proposal_ns })
    h.ok(#ds > 0, 'the diagnostics stay on the written code')
    h.eq(1, ds[1].lnum, 'on the written line')
    h.ok(ds[1].message:find('^imports a network module'), ds[1].message)
    -- The next change of the buffer clears them.
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { '# changed' })
    h.wait(2000, function() return #vim.diagnostic.get(buf, { namespace = proposal_ns }) == 0 end,
      'the diagnostics to go')
  end },

  { 'trust: split view: a denied hunk has a badge in the proposal window', function()
    h.setup_model('fake-deny', { diff_style = 'split' })
    local buf = h.buffer({ '# fetch' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local rv = intent_cmd('KilnIntent fetch a page', buf)
    local marks = vim.api.nvim_buf_get_extmarks(rv.pbuf, review_ns, 0, -1, { details = true })
    h.eq(1, #marks, 'one badge')
    h.eq(1, marks[1][2], 'on the first proposed line')
    h.ok(marks[1][4].virt_text[1][1]:find('DENIED by PY-IMPORT-NETWORK', 1, true), vim.inspect(marks[1][4]))
    local ds = vim.diagnostic.get(rv.pbuf, { namespace = proposal_ns })
    h.ok(#ds > 0 and ds[1].lnum == 1, 'the diagnostics on the proposed line: ' .. vim.inspect(ds))
  end },

  { 'trust: an edit away from the hunks keeps them; a touched hunk goes stale, marked', function()
    local want, buf = long_review()
    -- Away from every hunk: a line above them all, and the last line.
    vim.cmd('normal! ggOimport os')
    vim.cmd('normal! GA, edited')
    vim.wait(50, function() return false end)
    h.ok(require('kiln.intent').review(buf), 'the review survived')
    local median = "print('median of means', statistics.median(m for m, _ in results))"
    local median_pat = median:gsub('%p', '%%%0')
    lines_match({ 'kiln hunk 1/3 .*', 'import math', 'kiln hunk 2/3 .*', '', 'kiln hunk 3/3 .*', median_pat },
      virt_text(buf), 'the review after the edits')
    -- Into hunk 2's line (now row 14).
    vim.cmd("normal! 14Gccprint('edited')")
    vim.wait(50, function() return false end)
    lines_match({ 'kiln hunk 1/3 .*', 'import math',
      'STALE: its lines changed since the proposal; it cannot be applied %(gr drops it%)  kiln hunk 2/3 .*', '',
      'kiln hunk 3/3 .*', median_pat }, virt_text(buf), 'hunk 2 is marked stale')
    -- The marks sit where the hunks are now.
    local rows = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, review_ns, 0, -1, { details = true })) do
      if m[4].hl_group == 'DiffDelete' then
        table.insert(rows, m[2] + 1)
      end
    end
    h.eq({ 4, 14, 32 }, rows, 'the replaced lines moved with the edit')
    vim.cmd('normal gA')
    h.ok(h.message('hunk 2 not written'), 'the stale hunk is reported')
    local expect = { 'import os', '# before' }
    local kept = vim.deepcopy(want)
    kept[12] = "print('edited')"
    vim.list_extend(expect, kept)
    table.insert(expect, '# after, edited')
    h.eq(expect, h.lines(buf), 'hunks 1 and 3 written where they are now, 2 not')
    h.ok(require('kiln.intent').review(buf), 'hunk 2 is still under review')
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.cmd('normal ]h')
    h.eq(14, vim.api.nvim_win_get_cursor(0)[1], ']h goes to the stale hunk')
    vim.cmd('normal gr')
    h.eq(nil, require('kiln.intent').review(buf), 'the review ended')
    vim.cmd('KilnRun')
    h.wait_run()
    kept_ran('3%-32', 'edited')
  end },

  { 'trust: "the buffer changed while the model wrote" stays at the review', function()
    h.setup_model('fake-slow')
    local buf = h.buffer({ 'x = 1', 'y = 2' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local intent = require('kiln.intent')
    vim.cmd('KilnIntent greet')
    h.wait(20000, function() return #intent.preview_lines() > 0 and intent.preview_lines()[1] ~= '' end,
      'the first code in the preview')
    vim.api.nvim_buf_set_lines(buf, 2, 2, false, { 'z = 3' })
    h.wait(30000, function() return intent.pending[buf] == nil end, 'the proposal')
    local warn = 'STALE: the buffer changed while the model wrote; this proposal cannot be applied ' ..
      '%(run :KilnIntent again%)  kiln hunk 1/1 .*'
    lines_match({ warn, "print%('hello from kiln'%)" }, virt_text(buf), 'the warning at the hunk')
    -- Other messages come and go; the warning stays where the review is.
    vim.cmd('KilnRun')
    h.wait_run()
    vim.cmd('normal ga')
    h.eq({ 'x = 1', 'y = 2', 'z = 3' }, h.lines(buf), 'nothing written')
    lines_match({ warn, "print%('hello from kiln'%)" }, virt_text(buf), 'the warning is still there')
  end },

  { 'trust: the hint lists every key, and g? shows them all (inline)', function()
    h.setup_model('fake-coder')
    local buf = h.buffer({ 'x = 1' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    intent_cmd('KilnIntent greet', buf)
    local hint = 'ga accept, gr reject, gA all, gR reject all, ]h next, [h prev, g? help'
    lines_match({ 'kiln hunk 1/1 %(verdict allow%)   ' .. hint:gsub('%p', '%%%0'), "print%('hello from kiln'%)" },
      virt_text(buf),
      'the inline review')
    local before = #vim.api.nvim_list_wins()
    vim.cmd('normal g?')
    local wins = vim.api.nvim_list_wins()
    h.eq(before + 1, #wins, 'a help window')
    local float = wins[#wins]
    h.ok(vim.api.nvim_win_get_config(float).relative ~= '', 'it floats')
    h.eq({
      'kiln review keys',
      '  ga     accept the hunk under the cursor (:KilnAccept)',
      '  gr     reject the hunk under the cursor (:KilnReject)',
      '  gA     accept all pending hunks (:KilnAccept!)',
      '  gR     reject all pending hunks (:KilnReject!)',
      '  ]h     go to the next pending hunk',
      '  [h     go to the previous pending hunk',
      '  g?     show this list',
      '  (:help kiln-review; q or <Esc> closes this)',
    }, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false), 'the help lists every key')
  end },

  { 'trust: the split view names its keys and has g? too', function()
    h.setup_model('fake-coder', { diff_style = 'split' })
    local buf = h.buffer({ 'x = 1' })
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    local rv = intent_cmd('KilnIntent greet', buf)
    local pwin = vim.fn.bufwinid(rv.pbuf)
    h.eq('kiln proposal p1 (verdict allow): ga accept, gr reject, gA all, gR reject all, ]h next, [h prev, g? help',
      vim.wo[pwin].statusline, 'the proposal window says the keys')
    vim.api.nvim_set_current_win(pwin)
    local before = #vim.api.nvim_list_wins()
    vim.cmd('normal g?')
    local wins = vim.api.nvim_list_wins()
    h.eq(before + 1, #wins, 'a help window from the proposal window')
    h.eq('kiln review keys', vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[#wins]), 0, 1, false)[1],
      'the help')
  end },

  { 'trust: the inline diff marks changed words with DiffText', function()
    h.setup_model('fake-coder')
    local buf = h.buffer({ 'x = 1', 'print(x)' })
    intent_cmd('2KilnIntent greet', buf)
    local marks = vim.api.nvim_buf_get_extmarks(buf, review_ns, 0, -1, { details = true })
    local seen = {}
    for _, m in ipairs(marks) do
      local d = m[4]
      if d.hl_group then
        table.insert(seen, ('%s %d:%d-%d:%d'):format(d.hl_group, m[2], m[3], d.end_row, d.end_col))
      end
      if d.virt_lines then
        local chunks = {}
        for _, c in ipairs(d.virt_lines[2]) do
          table.insert(chunks, c[2] .. ' ' .. c[1])
        end
        h.eq({ 'DiffAdd print(', "DiffText 'hello from kiln'", 'DiffAdd )' }, chunks, 'the new line, word by word')
      end
    end
    table.sort(seen)
    h.eq({ 'DiffDelete 1:0-2:0', 'DiffText 1:6-1:7' }, seen, 'the old line, and its changed word')
  end },

  { 'trust: accepting into an empty buffer leaves no blank line', function()
    h.setup_model('fake-coder')
    local buf = h.buffer({ '' })
    intent_cmd('KilnIntent greet', buf)
    vim.cmd('normal ga')
    h.eq({ "print('hello from kiln')" }, h.lines(buf), 'only the code')
    vim.cmd('silent undo')
    h.eq({ '' }, h.lines(buf), 'one undo')
  end },

  { 'trust: a refused run names every rule and the setting, not a protocol field', function()
    h.setup()
    h.need('snippet/run')
    h.buffer({ 'import socket', 'import ctypes', 'print(1)' })
    vim.cmd('KilnRun')
    h.wait_run()
    local msg = 'the validator denied this code: ' ..
      'PY%-IMPORT%-NETWORK %(line 1: imports a network module: the sandbox has no network%); ' ..
      'PY%-IMPORT%-NATIVE %(line 2: [^)]*%)%. It does not run%. What the validator refuses is set by its ' ..
      'profile %("standard"%): to allow this, lower those rules in setup{ validator = { profiles = ' ..
      "{ standard = { %['PY%-IMPORT%-NETWORK'%] = 'warning' } } } } %(or pick another validator%.profile%) " ..
      'and ask again; to be offered to run such code anyway, one run at a time, set ' ..
      'setup{ validator = { allowOverride = true } }'
    lines_match({ 'kiln run: %[buffer%]', '%[' .. msg .. '%]' }, require('kiln.output').lines(), 'the output window')
    h.ok(h.message('^kiln: ' .. msg .. '$'), 'the message: ' .. vim.inspect(h.messages))
    for _, m in ipairs(h.messages) do
      h.ok(not tostring(m.msg):find('"override"', 1, true), 'no protocol field: ' .. m.msg)
    end
  end },
}
