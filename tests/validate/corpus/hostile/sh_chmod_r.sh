# expect: SH-PERMISSIONS
chmod -R 777 .
