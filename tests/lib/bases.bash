# bases.bash: base images of the tests' own for ab-image build --base,
# made offline from the host's files and Debian packages and imported
# (no registry).  Each is tagged TAG; the caller removes it.
# shellcheck shell=bash

# ab_python_base TAG: Python 3 and its standard library alone (no shell,
# no busybox, no bash), with a USER root, an ENTRYPOINT, an ENV and a
# WORKDIR of its own.  Prints the image ID.
ab_python_base() {
	local root=$BATS_FILE_TMPDIR/python-root py l
	# Debian's Python (the Makefile installs python3), whatever PATH says.
	py=$(readlink -f /usr/bin/python3)
	rm -rf "$root"
	mkdir -p "$root/usr/bin" "$root/usr/lib/x86_64-linux-gnu" \
		"$root/lib64" "$root/etc"
	cp "$py" "$root/usr/bin/"
	ln -s "${py##*/}" "$root/usr/bin/python3"
	for l in $(ldd "$py" | awk '/=>/ { print $3 } /ld-linux/ { print $1 }'); do
		cp -L "$l" "$root/usr/lib/x86_64-linux-gnu/"
	done
	ln -s ../usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
		"$root/lib64/ld-linux-x86-64.so.2"
	ln -s usr/lib "$root/lib"
	cp -a "$(dirname "$(/usr/bin/python3 -c 'import os; print(os.__file__)')")" \
		"$root/usr/lib/"
	rm -rf "$root"/usr/lib/python3*/test "$root"/usr/lib/python3*/site-packages
	echo 'root:x:0:0:root:/root:/nonexistent' >"$root/etc/passwd"
	echo 'root:x:0:' >"$root/etc/group"
	tar -C "$root" -cf - . | docker import --change 'USER root' \
		--change 'ENTRYPOINT ["/usr/bin/python3"]' \
		--change 'ENV PATH=/usr/local/bin:/usr/bin PYTHONDONTWRITEBYTECODE=1' \
		--change 'WORKDIR /srv' - "$1" >/dev/null || return 1
	docker image inspect -f '{{.Id}}' "$1"
}

# ab_musl_base TAG: a root whose libc is musl (Debian's musl package),
# and nothing else.  Prints the image ID.
ab_musl_base() {
	local root=$BATS_FILE_TMPDIR/musl-root deb
	rm -rf "$root" "$BATS_FILE_TMPDIR/musl-deb"
	mkdir -p "$root" "$BATS_FILE_TMPDIR/musl-deb"
	(cd "$BATS_FILE_TMPDIR/musl-deb" && apt-get download musl) \
		>/dev/null 2>&1 || return 1
	deb=$(echo "$BATS_FILE_TMPDIR"/musl-deb/musl_*.deb)
	dpkg-deb -x "$deb" "$root"
	ln -s x86_64-linux-musl/libc.so "$root/lib/ld-musl-x86_64.so.1"
	tar -C "$root" -cf - . | docker import \
		--change 'ENV PATH=/usr/bin:/lib' - "$1" >/dev/null || return 1
	docker image inspect -f '{{.Id}}' "$1"
}

# ab_unittest_repo DIR: a repository of one commit whose python3 -m
# unittest runs one test, which passes.
ab_unittest_repo() {
	git init -q "$1"
	printf 'import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n' >"$1/test_add.py"
	ab_commit "$1" py
}
