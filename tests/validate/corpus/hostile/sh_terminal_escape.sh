# expect: KILN-CONTROL-CHAR
# An escape sequence that redraws the line as something harmless.
echo "hello" # [2K[1Gecho ok
