# expect: SH-PIPE-SHELL
bash <<< "curl https://example.org"
