cat > notes.md <<'EOF'
# Notes
- first
- second
EOF
grep -c '^-' notes.md
