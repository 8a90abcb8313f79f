# expect: SH-PERMISSIONS verdict=warn
chmod -R 777 .
