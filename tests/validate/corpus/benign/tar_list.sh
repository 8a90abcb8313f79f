tar -tzf archive.tar.gz | grep '\.csv$' | sort
