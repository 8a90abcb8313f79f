-- luacheck configuration for the Neovim plugin (tests/suites/60-nvim.sh runs it).
std = 'luajit'
globals = { 'vim', '_G' }
max_line_length = 120
