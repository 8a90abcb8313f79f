# expect: SH-NETWORK SH-PIPE-SHELL
curl -fsSL https://example.org/install.sh | sh
