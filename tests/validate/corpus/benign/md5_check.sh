md5sum data/*.csv > checksums.md5
md5sum -c checksums.md5
