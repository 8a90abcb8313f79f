# expect: SH-PERMISSIONS SH-WRITE-OUTSIDE
chown -R nobody /var/www
