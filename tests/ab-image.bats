#!/usr/bin/env bats
# ab-image: building, registering, verifying and refusing images.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

setup_file() {
	# Recipes for the hash cache's tests, copied before the build, so
	# that they have settled (settled, below) by the time those run.
	cp -a "$AB_ROOT/image" "$BATS_FILE_TMPDIR/recipe.reuse"
	cp -a "$AB_ROOT/image" "$BATS_FILE_TMPDIR/recipe.lie"
	ab_setup_file
}

teardown_file() {
	ab_teardown_file
}

teardown() {
	ab_proxy_stop
}

record_of() {
	printf '%s/image/%s\n' "$AB_STATE_DIR" "${1#image:}"
}

digest_of() {
	sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$(record_of "$1")"
}

# settled DIR: waits until every file under DIR is one the hash cache
# records: its mtime and its ctime more than AB_HC_SETTLE (2) seconds old
# (lib/base/hashcache.h).  touch -d cannot make a file so: it sets the mtime,
# and moves the ctime to now.
settled() {
	local newest _
	newest=$(find "$1" -printf '%C@\n%T@\n' | sort -n | tail -n 1)
	for _ in $(seq 1 100); do
		awk -v n="$newest" -v t="$(date +%s.%N)" \
			'BEGIN { exit !(t - n > 2.05) }' && return 0
		sleep 0.05
	done
	echo "$1 changed $newest; still not settled" >&2
	return 1
}

count_records() {
	find "$AB_STATE_DIR/image" -maxdepth 1 -type f -name '[0-9a-f]*' |
		wc -l
}

@test "building the default image twice gives one registered handle" {
	[[ $AB_IMAGE =~ ^image:[0-9a-f]{32}$ ]]
	run_exact 0 ab-image build
	assert_equal "$output" "$AB_IMAGE"
	assert_regex "$stderr" "reusing $AB_IMAGE"
	run_exact 0 ab-image verify "$AB_IMAGE"
	assert_equal "$output" "$AB_IMAGE"
	run_exact 0 ab-image list
	assert_line "$AB_IMAGE"
}

@test "a build's last stderr line says built for a new image, reused for a registered one" {
	run_exact 0 ab-image build
	assert_equal "$output" "$AB_IMAGE"
	assert_equal "${stderr##*$'\n'}" "ab-image: reused"
	run_exact 0 ab-image build --rebuild
	local second=$output
	[[ $second =~ ^image:[0-9a-f]{32}$ ]]
	[ "$second" != "$AB_IMAGE" ]
	assert_equal "${stderr##*$'\n'}" "ab-image: built"
	run_exact 0 ab-image remove "$second"
}

@test "the image carries its pins and runs as the agent user" {
	local d
	d=$(digest_of "$AB_IMAGE")
	run docker image inspect "$d" --format \
		'{{.Config.User}} {{json .Config.Entrypoint}} {{index .Config.Labels "org.agentbox.version.git"}}'
	assert_success
	gitv=$(dpkg-query -W -f='${Version}' git | sed 's/^[0-9]*://; s/-[^-]*$//')
	assert_output "10001:10001 [\"/usr/lib/agentbox/probe.sh\"] $gitv"
	run docker image inspect "$d" --format \
		'{{index .Config.Labels "org.agentbox.state"}}'
	assert_output "$(ab_state_sid)"
}

@test "a registered image's version probe ran in a locked container that is gone" {
	run docker ps -a --filter "label=org.agentbox.state=$(ab_state_sid)" -q
	assert_output ""
}

@test "--rebuild makes a new image and handle; both verify" {
	run_exact 0 ab-image build --rebuild
	local second=$output
	[ "$second" != "$AB_IMAGE" ]
	[ "$(digest_of "$second")" != "$(digest_of "$AB_IMAGE")" ]
	run_exact 0 ab-image verify "$second"
	run_exact 0 ab-image remove "$second"
	run_exact 1 ab-image verify "$second"
	assert_regex "$stderr" "unknown handle"
}

@test "a forged handle is refused" {
	run_exact 1 ab-image verify "image:0123456789abcdef0123456789abcdef"
	assert_one_error_line ab-image
	assert_regex "$stderr" "unknown handle"
}

@test "a tag or a malformed handle is refused" {
	local h
	for h in ubuntu:latest "image:XYZ" "image:$(printf '%031d' 0)" \
		"alloc:0123456789abcdef0123456789abcdef" "$(digest_of "$AB_IMAGE")"; do
		run_exact 1 ab-image verify "$h"
		assert_one_error_line ab-image
	done
}

@test "a record edited to name another digest is refused" {
	run_exact 0 ab-image build --rebuild
	local other=$output rec
	rec=$(record_of "$AB_IMAGE")
	cp "$rec" "$BATS_TEST_TMPDIR/saved"
	sed -i "s/$(digest_of "$AB_IMAGE")/$(digest_of "$other")/" "$rec"
	run_exact 1 ab-image verify "$AB_IMAGE"
	cp "$BATS_TEST_TMPDIR/saved" "$rec"
	assert_one_error_line ab-image
	assert_regex "$stderr" "label org.agentbox.image does not match"
	run_exact 0 ab-image remove "$other"
	run_exact 0 ab-image verify "$AB_IMAGE"
}

@test "a record copied under another handle is refused" {
	local rec copy=image:00000000000000000000000000000001
	rec=$(record_of "$AB_IMAGE")
	cp "$rec" "$(record_of "$copy")"
	run_exact 1 ab-image verify "$copy"
	rm -f "$(record_of "$copy")"
	assert_regex "$stderr" "not issued by state directory"
}

@test "a record from another state directory is refused" {
	local other
	other=$(ab_new_state)
	AB_STATE_DIR=$other run_exact 0 ab-image list
	mkdir -m 0700 "$other/image"
	cp "$(record_of "$AB_IMAGE")" "$other/image/"
	AB_STATE_DIR=$other run_exact 1 ab-image verify "$AB_IMAGE"
	assert_regex "$stderr" "not issued by state directory"
}

@test "an image removed behind the record's back is refused" {
	run_exact 0 ab-image build --rebuild
	local h=$output
	docker rmi -f "$(digest_of "$h")" >/dev/null
	run_exact 1 ab-image verify "$h"
	assert_one_error_line ab-image
	assert_regex "$stderr" "gone from the engine"
	# And build does not reuse it: it still answers with an intact image.
	run_exact 0 ab-image build
	assert_equal "$output" "$AB_IMAGE"
	rm -f "$(record_of "$h")"
}

@test "an image replaced behind the record's back is refused" {
	run_exact 0 ab-image build --rebuild
	# The tag is this state's own: another file or suite may run this
	# test at the same time.
	local h=$output d tag
	tag=abtest-$(ab_state_sid | cut -c1-12)-replaced
	d=$(digest_of "$h")
	# Same labels, different content: a new ID, so the record's ID is gone
	# and a look-alike under the old labels is not accepted either.
	docker rmi -f "$d" >/dev/null
	printf 'FROM %s\nLABEL extra=1\n' "$(digest_of "$AB_IMAGE")" |
		docker build -q -t "$tag" - >/dev/null
	run_exact 1 ab-image verify "$h"
	docker rmi -f "$tag" >/dev/null
	rm -f "$(record_of "$h")"
}

@test "a base that is not pinned is refused before any engine call" {
	local b
	for b in node:26 node "node@sha256:abc" "node@sha256:$(printf '%064d' 0)x" \
		"@sha256:$(printf '%064d' 0)" "No\$de@sha256:$(printf '%064d' 0)" \
		"sha256:abc" "$(printf '%064d' 0)"; do
		DOCKER_HOST=unix:///nonexistent run_exact 2 \
			ab-image build --recipe agents --base "$b"
		assert_one_error_line ab-image
		assert_regex "$stderr" "not pinned"
	done
}

@test "the production recipe is gone, and says what replaces it" {
	DOCKER_HOST=unix:///nonexistent run_exact 2 ab-image build --recipe production
	assert_one_error_line ab-image
	assert_regex "$stderr" "--recipe agents --base IMAGE"
	[ ! -e "$AB_ROOT/image/Dockerfile" ]
}

@test "a malformed deadline file is a usage error" {
	local f=$BATS_TEST_TMPDIR/deadline bad
	for bad in "" "soon" "12abc" "1.2.3" ".5" "-1" "1e9" "$(date +%s) $(date +%s)"; do
		printf '%s\n' "$bad" >"$f"
		run_exact 2 ab-image build --deadline "$f"
		assert_one_error_line ab-image
	done
	run_exact 2 ab-image build --deadline "$BATS_TEST_TMPDIR/missing"
	AB_DEADLINE=$f run_exact 2 ab-image build
}

@test "a well-formed deadline file with a fraction is accepted" {
	local f=$BATS_TEST_TMPDIR/deadline
	printf '%s.25\n' "$(($(date +%s) + 120))" >"$f"
	run_exact 0 ab-image build --deadline "$f"
	assert_equal "$output" "$AB_IMAGE"
}

@test "a deadline already passed is 124 and registers nothing" {
	local f=$BATS_TEST_TMPDIR/deadline n
	n=$(count_records)
	ab_deadline_in "$f" -5
	run_exact 124 ab-image build --rebuild --deadline "$f"
	assert_one_error_line ab-image
	assert_equal "$(count_records)" "$n"
	AB_DEADLINE=$f run_exact 124 ab-image verify "$AB_IMAGE"
}

@test "an unreachable engine is 125 and names the socket" {
	DOCKER_HOST=unix:///nonexistent run_exact 125 ab-image verify "$AB_IMAGE"
	# The socket's own reason, not a port no socket has.
	assert_equal "$stderr" "ab-image: cannot reach the engine at unix:///nonexistent: No such file or directory"
	DOCKER_HOST=unix:///nonexistent run_exact 125 ab-image build
	assert_regex "$stderr" "unix:///nonexistent"
}

@test "an unsupported DOCKER_HOST is a usage error" {
	DOCKER_HOST=fd://3 run_exact 2 ab-image verify "$AB_IMAGE"
	assert_equal "$stderr" "ab-image: DOCKER_HOST fd://3: only unix:///PATH, tcp://HOST[:PORT] and ssh://[USER@]HOST[:PORT] are supported"
}

@test "a group-writable state directory is refused" {
	local d
	d=$(ab_new_state)
	chmod 0770 "$d"
	AB_STATE_DIR=$d run_exact 1 ab-image list
	assert_one_error_line ab-image
	assert_regex "$stderr" "group or world writable"
	chmod 0702 "$d"
	AB_STATE_DIR=$d run_exact 1 ab-image list
}

@test "a state directory owned by someone else is refused" {
	local d
	d=$(ab_new_state)
	chown 65534 "$d"
	AB_STATE_DIR=$d run_exact 1 ab-image list
	assert_one_error_line ab-image
	assert_regex "$stderr" "owned by uid 65534"
}

@test "a state directory that is a symbolic link is refused" {
	local d
	d=$(ab_new_state)
	ln -s "$d" "$BATS_TEST_TMPDIR/link"
	AB_STATE_DIR=$BATS_TEST_TMPDIR/link run_exact 1 ab-image list
	assert_one_error_line ab-image
}

@test "a missing state directory is created 0700" {
	local d=$BATS_TEST_TMPDIR/new/state
	# Listing makes none (ab-image(1)); a sweep, which writes, does.
	AB_STATE_DIR=$d run_exact 0 ab-image list
	[ ! -e "$d" ]
	AB_STATE_DIR=$d run_exact 0 ab-clean --sweep
	assert_equal "$(stat -c %a "$d")" 700
	[[ $(cat "$d/sid") =~ ^[0-9a-f]{32}$ ]]
}

@test "a tool killed between writing a record and renaming it leaves no handle" {
	local before pid tmp id
	before=$(ab-image list)
	AB_TEST_PAUSE=record-written ab-image build --rebuild \
		>"$BATS_TEST_TMPDIR/out" 2>/dev/null &
	pid=$!
	ab_wait_stopped "$pid"
	kill -KILL "$pid"
	wait "$pid" || true
	[ ! -s "$BATS_TEST_TMPDIR/out" ]
	tmp=$(find "$AB_STATE_DIR/image" -name '.tmp-*')
	[ -n "$tmp" ]
	id=${tmp##*-}
	[[ $id =~ ^[0-9a-f]{32}$ ]]
	run_exact 0 ab-image list
	assert_equal "$output" "$before"
	run_exact 1 ab-image verify "image:$id"
	assert_regex "$stderr" "unknown handle"
	rm -f "$tmp"
	docker images -q --filter "label=org.agentbox.image=$id" |
		xargs -r docker rmi -f >/dev/null
}

# What this state has on the engine that no record registers: probe
# containers, and images whose handle has no record.
build_leftovers() {
	local sid img id
	sid=$(ab_state_sid)
	docker ps -aq --filter "label=org.agentbox.state=$sid" \
		--filter label=org.agentbox.role=version-probe
	for img in $(docker images -q --no-trunc \
		--filter "label=org.agentbox.state=$sid"); do
		id=$(docker image inspect "$img" \
			--format '{{index .Config.Labels "org.agentbox.image"}}')
		[ -f "$AB_STATE_DIR/image/$id" ] || echo "$img"
	done
}

@test "ab-image killed at each pause point leaves what a sweep removes, and only that" {
	local point pid other oimg sid
	other=$(ab_new_state)
	oimg=$(AB_STATE_DIR=$other ab-image build 2>/dev/null)
	for point in image-made probe-created record-written; do
		AB_TEST_PAUSE=$point ab-image build --rebuild >/dev/null 2>&1 &
		pid=$!
		ab_wait_stopped "$pid"
		# Stopped, it is still alive: a sweep leaves its build alone.
		run_exact 0 ab-clean --sweep --all
		[ -n "$(build_leftovers)" ]
		kill -KILL "$pid"
		wait "$pid" || true
		run_exact 0 ab-clean --sweep
		assert_regex "$stderr" "left by killed builds"
		run build_leftovers
		assert_output ""
	done
	# The other state directory's image was never touched.
	AB_STATE_DIR=$other run_exact 0 ab-image verify "$oimg"
	sid=$(ab_state_sid "$other")
	docker images -q --filter "label=org.agentbox.state=$sid" | xargs -r docker rmi -f >/dev/null
}

# Waits until the engine answered every request the killed build sent
# (the proxy reads each answer to its end), or the request was dropped
# with its connection: the engine then has nothing of the build's left in
# flight.  A create or import it completes after the client died is a
# real object, and the sweep must see it to remove it.  A wait for the
# probe container makes nothing, and may last until the sweep removes it.
proxy_settled() {
	local _
	for _ in $(seq 1 300); do
		[ "$(grep '^[A-Z]' "$AB_PROXY_LOG" | grep -vc '/wait?')" = \
			"$(grep '^\(reply\|dropped\) ' "$AB_PROXY_LOG" |
				grep -vc '/wait?')" ] && return 0
		sleep 0.1
	done
	echo "the engine still holds a killed build's request" >&2
	return 1
}

@test "ab-image killed at random moments of a build leaves what a sweep removes" {
	local delay pid h
	ab_proxy_start
	for delay in 0.05 0.1 0.2 0.3 0.5; do
		DOCKER_HOST=unix://$AB_PROXY_SOCK \
			ab-image build --rebuild >/dev/null 2>&1 &
		pid=$!
		sleep "$delay"
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" || true
		proxy_settled
		run_exact 0 ab-clean --sweep
		run build_leftovers
		assert_output ""
	done
	# A build that finished meanwhile registered an image: verify it is
	# whole, then drop the extra registrations.
	run_exact 0 ab-image list
	for h in "${lines[@]}"; do
		run_exact 0 ab-image verify "$h"
		[ "$h" = "$AB_IMAGE" ] || run_exact 0 ab-image remove "$h"
	done
}

@test "a reply that arrives after the deadline registers nothing (124)" {
	local f=$BATS_TEST_TMPDIR/deadline n
	n=$(count_records)
	# The build's last engine call is the second image inspect: hold its
	# reply past the deadline.
	ab_proxy_start --match '^GET /v[0-9.]+/images/sha256:[0-9a-f]+/json$' \
		--nth 2 --action delay --seconds 8
	ab_deadline_in "$f" 6
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 124 \
		ab-image build --rebuild --deadline "$f"
	assert_one_error_line ab-image
	grep -q '^delay GET' "$AB_PROXY_LOG"
	assert_equal "$(count_records)" "$n"
	# The unregistered image was removed too.
	run docker images -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_equal "$(printf '%s\n' "$output" | sort -u | grep -c .)" 1
}

@test "an engine connection cut mid-build is 125 and leaves no container" {
	local n
	n=$(count_records)
	# The start never reaches the engine, however often it is sent: on a
	# reused connection that dies before one whole header line came back,
	# curl quietly sends the request again on a fresh one (so a reply cut
	# after its first byte let the probe start once, and the build pass).
	ab_proxy_start --match '^POST /v[0-9.]+/containers/[0-9a-f]+/start$' \
		--action cut --cut-request --times 0
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-image build --rebuild
	assert_one_error_line ab-image
	grep -q '^cut POST' "$AB_PROXY_LOG"
	assert_equal "$(count_records)" "$n"
	run docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
	run docker images -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_equal "$(printf '%s\n' "$output" | sort -u | grep -c .)" 1
}

@test "an upload cut mid-import is 125 and registers nothing" {
	local n
	n=$(count_records)
	ab_proxy_start --match '^POST /v[0-9.]+/images/create' \
		--action cut --cut-upload-bytes 1000000
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-image build --rebuild
	assert_one_error_line ab-image
	assert_equal "$(count_records)" "$n"
}

@test "an engine that fails the look for a registered image is 125 and makes nothing" {
	local n
	n=$(count_records)
	ab_proxy_start --match '^GET /v[0-9.]+/images/sha256:[0-9a-f]+/json$' \
		--action fail --nth 1 --times 1
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-image build
	assert_one_error_line ab-image
	assert_regex "$stderr" "inspect the image"
	grep -q '^fail GET' "$AB_PROXY_LOG"
	run grep -c '^POST' "$AB_PROXY_LOG"
	assert_output 0
	assert_equal "$(count_records)" "$n"
}

@test "an engine error reply is carried into the error line" {
	ab_proxy_start --match '^GET /v[0-9.]+/images/sha256:' --action fail \
		--status 500 --message "disk on fire"
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-image verify "$AB_IMAGE"
	assert_one_error_line ab-image
	assert_regex "$stderr" "disk on fire"
}

@test "an engine too old for agentbox is refused" {
	ab_proxy_start --match '^GET /_ping' --action fail --status 200 \
		--header 'Api-Version: 1.40'
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 1 ab-image verify "$AB_IMAGE"
	assert_regex "$stderr" "API 1.40"
}

@test "a plain tcp:// DOCKER_HOST works" {
	local port=$((20000 + RANDOM % 20000))
	ab_proxy_start --listen-tcp "127.0.0.1:$port"
	DOCKER_HOST=tcp://127.0.0.1:$port run_exact 0 ab-image verify "$AB_IMAGE"
}

@test "one connection serves a tool's sequential calls" {
	ab_proxy_start
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 0 ab-image verify "$AB_IMAGE"
	# verify: ping, inspect, info, create, inspect, start, delete on one
	# connection; the wait and the attach that reads the probe's output
	# each hold one of their own.
	run grep -c '^connection' "$AB_PROXY_LOG"
	assert_output 3
}

@test "a probe whose output is cut mid-frame is 125, and its container goes" {
	# The reply head, then a few bytes into the probe's first frame.
	ab_proxy_start --match '/attach' --action cut --after-bytes 80
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-image verify "$AB_IMAGE"
	assert_one_error_line ab-image
	[[ $stderr == *"the probe's output was cut" ]]
	grep -q '^cut POST .*/attach' "$AB_PROXY_LOG"
	run docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid)" \
		--filter label=org.agentbox.role=version-probe
	assert_output ""
}

@test "--help prints the synopsis of the man page and exits 0" {
	run_exact 0 ab-image --help
	assert_regex "$output" "^usage: ab-image build"
	run_exact 2 ab-image frobnicate
	assert_one_error_line ab-image
	run_exact 2 ab-image verify
	run_exact 2 ab-image build --recipe nonsense
	run_exact 2 ab-image build --packages make --base "node@sha256:$(printf '%064d' 0)"
}

@test "no recipe pins a CLI version the adapters refuse" {
	local claude codex f
	# The adapters' pins, as lib/agent/adapter.c states them.
	read -r codex claude < <(sed -n \
		's/.*\*version = codex ? "\([^"]*\)" : "\([^"]*\)";.*/\1 \2/p' \
		"$AB_ROOT/lib/agent/adapter.c")
	[ -n "$codex" ] && [ -n "$claude" ]
	for f in agents.manifest agents.layer; do
		grep -qx "version claude-code =$claude" "$AB_ROOT/image/$f"
		grep -qx "version codex =$codex" "$AB_ROOT/image/$f"
	done
	# No other recipe pins either CLI.
	run grep -lE '(claude-code|codex)[=@ ]' "$AB_ROOT"/image/*.manifest \
		"$AB_ROOT"/image/*.layer
	assert_output "$AB_ROOT/image/agents.manifest"$'\n'"$AB_ROOT/image/agents.layer"
}

@test "make install puts the tool, its recipe and its man page under DESTDIR" {
	local d=$BATS_TEST_TMPDIR/root
	make -C "$AB_ROOT" --no-print-directory install DESTDIR="$d" \
		PREFIX=/opt/ab >/dev/null
	[ -x "$d/opt/ab/bin/ab-image" ]
	[ -f "$d/opt/ab/share/agentbox/image/default.manifest" ]
	[ -f "$d/opt/ab/share/man/man1/ab-image.1" ]
	# The installed tool finds its installed recipe: the same inputs, so
	# the registered image is reused.
	run_exact 0 "$d/opt/ab/bin/ab-image" build
	assert_equal "$output" "$AB_IMAGE"
}

@test "the man page's synopsis names every verb and option of --help" {
	local word
	assert_man_covers_help ab-image 5
	for word in build verify remove list; do
		grep -q "Cm $word" "$AB_ROOT/man/ab-image.1"
	done
}

@test "an image whose version probe disagrees with its labels is refused and removed" {
	local d=$BATS_TEST_TMPDIR/recipe n
	cp -a "$AB_ROOT/image" "$d"
	# The image's git would report another version than its label.
	# shellcheck disable=SC2016 # the script's own text
	sed -i 's|v=${v#git version }|v=0.0.1|' "$d/versions.sh"
	n=$(count_records)
	run_exact 1 ab-image build --dir "$d"
	assert_one_error_line ab-image
	assert_regex "$stderr" "does not report git .* as the label claims"
	assert_equal "$(count_records)" "$n"
	run docker images -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_equal "$(printf '%s\n' "$output" | sort -u | grep -c .)" 1
	run docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
}

@test "a malformed recipe is a usage error before any engine call" {
	local d=$BATS_TEST_TMPDIR/recipe
	cp -a "$AB_ROOT/image" "$d"
	printf 'frobnicate /x\n' >>"$d/default.manifest"
	DOCKER_HOST=unix:///nonexistent run_exact 2 ab-image build --dir "$d"
	assert_regex "$stderr" "default.manifest:[0-9]+: unknown directive"
	cp "$AB_ROOT/image/default.manifest" "$d/"
	printf 'version nothing no-such-debian-package\n' >>"$d/default.manifest"
	DOCKER_HOST=unix:///nonexistent run_exact 2 ab-image build --dir "$d"
	assert_regex "$stderr" "not installed"
	cp "$AB_ROOT/image/default.manifest" "$d/"
	sed -i 's|^user .*|user 0:0|' "$d/default.manifest"
	DOCKER_HOST=unix:///nonexistent run_exact 2 ab-image build --dir "$d"
	assert_regex "$stderr" "user must be 10001:10001"
}

@test "an import whose reply is lost still leaves no image behind" {
	local n
	n=$(count_records)
	# The engine has made the image; the client never hears its ID.
	ab_proxy_start --match '^POST /v[0-9.]+/images/create' \
		--action cut --after-bytes 1
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-image build --rebuild
	assert_one_error_line ab-image
	grep -q '^cut POST' "$AB_PROXY_LOG"
	assert_equal "$(count_records)" "$n"
	run docker images -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_equal "$(printf '%s\n' "$output" | sort -u | grep -c .)" 1
}

@test "a reuse takes unchanged inputs' hashes from the state's cache; an input rewritten with its size and mtime kept is still seen" {
	local d=$BATS_FILE_TMPDIR/recipe.reuse f log=$BATS_TEST_TMPDIR/strace second
	f=$d/nsswitch.conf
	cp -p "$f" "$BATS_TEST_TMPDIR/ref"
	# A file changed less than 2 s before it is hashed is not recorded
	# (lib/base/hashcache.h): the copy must settle first.
	settled "$d"
	run_exact 0 ab-image build --dir "$d"
	assert_equal "$output" "$AB_IMAGE"
	grep -q " $f\$" "$AB_STATE_DIR/hashes"
	# Reused again: of the recipe's files, only the manifest is read.
	# (LeakSanitizer cannot work under strace: make asan checks leaks in
	# the other tests.)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -y -e trace=pread64,read -o "$log" \
		ab-image build --dir "$d" >"$BATS_TEST_TMPDIR/out" 2>/dev/null
	assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "$AB_IMAGE"
	grep -q "<$d/default.manifest>" "$log"
	run grep -c "<$d/" "$log"
	assert_output "$(grep -c "<$d/default.manifest>" "$log")"
	# Same size, same mtime, other bytes: its ctime moved, so it is read,
	# and the recipe is another one.
	tr '[:lower:]' '[:upper:]' <"$BATS_TEST_TMPDIR/ref" >"$f"
	touch -r "$BATS_TEST_TMPDIR/ref" "$f"
	assert_equal "$(stat -c '%s %y' "$f")" \
		"$(stat -c '%s %y' "$BATS_TEST_TMPDIR/ref")"
	run_exact 0 ab-image build --dir "$d"
	second=$output
	[ "$second" != "$AB_IMAGE" ]
	assert_equal "${stderr##*$'\n'}" "ab-image: built"
	run_exact 0 ab-image remove "$second"
}

@test "a cache that is garbage, or that lies about an input, costs a full hash, not a wrong image or a second one" {
	local d=$BATS_FILE_TMPDIR/recipe.lie f n
	f=$d/nsswitch.conf
	settled "$d"
	run_exact 0 ab-image build --dir "$d"
	assert_equal "$output" "$AB_IMAGE"
	n=$(count_records)
	# An entry for the file as it is, with another file's hash.
	sed -i "s|^v1 [0-9a-f]\\{64\\} \\(.* $f\\)\$|v1 $(printf '%064d' 0) \\1|" \
		"$AB_STATE_DIR/hashes"
	grep -q "^v1 0\\{64\\} .* $f\$" "$AB_STATE_DIR/hashes"
	run_exact 0 ab-image build --dir "$d"
	assert_equal "$output" "$AB_IMAGE"
	assert_equal "${stderr##*$'\n'}" "ab-image: reused"
	printf 'v1 garbage\n\0\377 not a line' >"$AB_STATE_DIR/hashes"
	run_exact 0 ab-image build --dir "$d"
	assert_equal "$output" "$AB_IMAGE"
	assert_equal "$(count_records)" "$n"
}
