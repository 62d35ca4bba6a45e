#!/usr/bin/env bats
# agentbox against engines other than the host's: engines of the test's
# own (tests/lib/engine2.bash), each in a network namespace of its own.
# Tagged host: the host's docker0 and packet filter are compared before
# and after, and other files' egress networks change the filter.

# bats file_tags=host
# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2153 # AB_IMAGE is set by ab_engines_setup_file
load helpers
load lib/engine2

setup_file() {
	ab_engines_setup_file --image e2
	E2=$(ab_engine host e2) E2_IMAGE=$(ab_engine image e2)
	export E2 E2_IMAGE
	DL=$BATS_FILE_TMPDIR/deadline
	ab_deadline_in "$DL" 3600
	export DL
}

teardown_file() {
	ab_engines_stop
	ab_teardown_file
}

teardown() {
	# Whatever a failed test left on the second engine or the host's.
	ab_state_sweep --alloc "$E2" ""
	ab_records_rm
}

e2() {
	DOCKER_HOST=$E2 "$@"
}

# Objects of allocation $1 on the engine DOCKER_HOST names, a count.
objects() {
	{
		docker ps -aq --filter "label=org.agentbox.alloc=$1"
		docker volume ls -q --filter "label=org.agentbox.alloc=$1"
	} | grep -c . || true
}

# A seeded allocation on the second engine: ALLOC, AID.
e2_alloc() {
	local repo=$BATS_TEST_TMPDIR/repo
	[ -d "$repo" ] || ab_repo "$repo"
	DOCKER_HOST=$E2 run_exact 0 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	ALLOC=$output AID=${output#alloc:}
	DOCKER_HOST=$E2 run_exact 0 ab-seed "$ALLOC" --repo "$repo" \
		--commit "$(git -C "$repo" rev-parse HEAD)" --deadline "$DL"
}

@test "a second engine of the test's own is another engine: its own ID, no bridge of the host's" {
	local host_id e2_id
	host_id=$(docker info --format '{{.ID}}')
	e2_id=$(e2 docker info --format '{{.ID}}')
	[ -n "$e2_id" ]
	[ "$e2_id" != "$host_id" ]
	run ip -n "$(ab_engine ns e2)" -br link show docker0
	assert_success
	run e2 docker info --format '{{.Driver}}'
	assert_output vfs
}

@test "a whole task runs on the second engine through DOCKER_HOST, and nothing of it is on either engine after" {
	local repo=$BATS_TEST_TMPDIR/repo sid host_images
	ab_repo "$repo"
	sid=$(ab_state_sid)
	host_images=$(docker images -q --filter "label=org.agentbox.state=$sid")
	DOCKER_HOST=$E2 run_exact 0 "$AB_ROOT/sh/run-task" --repo "$repo" \
		--commit "$(git -C "$repo" rev-parse HEAD)" --phase execution \
		--image "$E2_IMAGE" --timeout 300 --attempt "e2-$RANDOM$RANDOM" \
		--patch "$BATS_TEST_TMPDIR/patch" -- sh -c 'echo two >/work/b'
	# shellcheck disable=SC2034 # record_field reads it
	RECORD=$output
	assert_equal "$(record_field 'r["reason"]')" exited
	grep -q '^+two$' "$BATS_TEST_TMPDIR/patch"
	run e2 docker images -q --filter "label=org.agentbox.state=$sid"
	[ -n "$output" ]
	# It was built there: the host engine has its own image alone.
	run docker images -q --filter "label=org.agentbox.state=$sid"
	assert_output "$host_images"
	run ab_leftovers "$sid"
	assert_output ""
	assert_equal "$(e2 docker ps -aq --filter "label=org.agentbox.state=$sid")" ""
	assert_equal "$(e2 docker volume ls -q --filter "label=org.agentbox.state=$sid")" ""
}

@test "each engine carries a mark of its own, made once, and the record names it" {
	local m
	e2_alloc
	m=$(e2 ab_engine_mark)
	[[ $m =~ ^[0-9a-f]{32}$ ]]
	grep -q "\"engine\":\"$m\"" "$AB_STATE_DIR/alloc/$AID"
	# A second allocation finds the mark and keeps it.
	DOCKER_HOST=$E2 run_exact 0 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	assert_equal "$(e2 ab_engine_mark)" "$m"
	e2 ab-clean "$ALLOC" "$output" 2>/dev/null
	assert_equal "$(e2 docker volume ls -q --filter label=org.agentbox.engine)" agentbox-engine
}

@test "a handle used against another engine is refused by every tool that takes one, naming both engines; nothing is dropped" {
	local m2 m1 prof ctr want n
	# The host engine gets its mark from an allocation of its own.
	run_exact 0 ab-alloc --image "$AB_IMAGE" --deadline "$DL"
	ab-clean "$output" 2>/dev/null
	m1=$(ab_engine_mark)
	[ -n "$m1" ]
	e2_alloc
	m2=$(e2 ab_engine_mark)
	DOCKER_HOST=$E2 run_exact 0 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "e2-$RANDOM$RANDOM" --deadline "$DL" -- true
	prof=$output
	DOCKER_HOST=$E2 run_exact 0 ab-validate "$prof"
	ctr=$output
	want="alloc:$AID lives on engine $m2, not on engine $m1 at unix:///var/run/docker.sock"
	run_exact 1 ab-seed "$ALLOC" --repo "$BATS_TEST_TMPDIR/repo" \
		--commit "$(git -C "$BATS_TEST_TMPDIR/repo" rev-parse HEAD)" --deadline "$DL"
	assert_equal "$stderr" "ab-seed: $want"
	n=$(find "$AB_STATE_DIR/profile" -type f | wc -l)
	run_exact 1 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "e2-again-$RANDOM" --deadline "$DL" -- true
	assert_equal "$stderr" "ab-profile: $want"
	assert_equal "$(find "$AB_STATE_DIR/profile" -type f | wc -l)" "$n"
	run_exact 1 ab-validate "$prof"
	assert_equal "$stderr" "ab-validate: $want"
	# ab-run's own table: 126, it refused to let the agent run.
	run_exact 126 ab-run "$ctr"
	assert_equal "$stderr" "ab-run: drift: $want; the agent did not start"
	run_exact 1 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/out.patch"
	assert_equal "$stderr" "ab-export: $want"
	[ ! -e "$BATS_TEST_TMPDIR/out.patch" ]
	# The false proof of old: absence "proven" on the wrong engine.
	run_exact 1 ab-clean "$ALLOC"
	assert_equal "$stderr" "ab-clean: $want"
	[ -e "$AB_STATE_DIR/alloc/$AID" ]
	# The keeper, the agent's container and three volumes.
	assert_equal "$(e2 objects "$AID")" 5
	# On its own engine everything works, and it goes.
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	assert_equal "$(e2 objects "$AID")" 0
}

@test "a sweep proves absence on the engine it reached alone: another engine's allocations are left to it, and counted" {
	e2_alloc
	run_exact 0 ab-clean --sweep --all
	refute_output --partial "$ALLOC"
	[[ $stderr == *"ab-clean: left 1 allocation of other engines to a sweep there"* ]]
	[ -e "$AB_STATE_DIR/alloc/$AID" ]
	assert_equal "$(e2 objects "$AID")" 4
	DOCKER_HOST=$E2 run_exact 0 ab-clean --sweep --all
	assert_output "$ALLOC"
	assert_equal "$(e2 objects "$AID")" 0
	[ ! -e "$AB_STATE_DIR/alloc/$AID" ]
}

@test "a record made before engines were recorded: the steps refuse it; ab-clean removes it where it is, and proves nothing elsewhere" {
	e2_alloc
	sed -i 's/"engine":"[0-9a-f]*",//' "$AB_STATE_DIR/alloc/$AID"
	run ! grep -q '"engine"' "$AB_STATE_DIR/alloc/$AID"
	DOCKER_HOST=$E2 run_exact 1 ab-export "$ALLOC"
	assert_equal "$stderr" "ab-export: alloc:$AID was made before agentbox recorded engines: clean it with ab-clean on the engine that holds it"
	run_exact 1 ab-clean "$ALLOC"
	assert_one_error_line ab-clean
	assert_regex "$stderr" "^ab-clean: alloc:$AID was made before agentbox recorded engines, and nothing of it is on the engine at unix:///var/run/docker.sock: its absence cannot be proven here"
	[ -e "$AB_STATE_DIR/alloc/$AID" ]
	# A sweep of the host's leaves it; one of its own engine takes it.
	run_exact 0 ab-clean --sweep --all
	refute_output --partial "$ALLOC"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	assert_equal "$stderr" "ab-clean: removed"
	assert_equal "$(e2 objects "$AID")" 0
}

@test "an engine whose mark was removed (by hand, or a prune): the steps refuse, saying how to restore it; ab-clean cleans what is there" {
	local m2 m2b first second cmd
	e2_alloc
	first=$ALLOC
	m2=$(e2 ab_engine_mark)
	e2 docker volume rm agentbox-engine >/dev/null
	DOCKER_HOST=$E2 run_exact 1 ab-export "$first"
	cmd="docker volume create --label org.agentbox.engine=$m2 agentbox-engine"
	assert_equal "$stderr" "ab-export: $first lives on engine $m2; the engine at $E2 has no agentbox mark (if it is that engine, its mark was removed: $cmd)"
	# Its image is refused the same way: the record names the old mark.
	DOCKER_HOST=$E2 run_exact 1 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	assert_equal "$stderr" "ab-alloc: $E2_IMAGE lives on engine $m2; the engine at $E2 has no agentbox mark (if it is that engine, its mark was removed: $cmd)"
	# A build marks the engine anew, and registers an image of its own.
	DOCKER_HOST=$E2 run_exact 0 ab-image build
	[ "$output" != "$E2_IMAGE" ]
	DOCKER_HOST=$E2 run_exact 0 ab-alloc --image "$output" --deadline "$DL"
	second=$output
	m2b=$(e2 ab_engine_mark)
	[ -n "$m2b" ] && [ "$m2b" != "$m2" ]
	DOCKER_HOST=$E2 run_exact 1 ab-export "$first"
	assert_equal "$stderr" "ab-export: $first lives on engine $m2, not on engine $m2b at $E2"
	# Its objects are here, so it lives here: ab-clean takes it whole.
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$first" "$second"
	assert_equal "$stderr" "ab-clean: removed"
	assert_equal "$(e2 objects "${first#alloc:}")" 0
	# Restored by hand as the message says, the mark is the engine's again.
	e2 docker volume rm agentbox-engine >/dev/null
	# shellcheck disable=SC2086 # the command as the message gives it
	e2 $cmd >/dev/null
	assert_equal "$(e2 ab_engine_mark)" "$m2"
}

@test "a mark whose label is not an ID is refused: nothing is allocated on that engine" {
	local m2 n
	m2=$(e2 ab_engine_mark)
	[ -n "$m2" ]
	e2 docker volume rm agentbox-engine >/dev/null
	e2 docker volume create --label org.agentbox.engine=bogus agentbox-engine >/dev/null
	n=$(find "$AB_STATE_DIR/alloc" -mindepth 1 2>/dev/null | wc -l)
	DOCKER_HOST=$E2 run_exact 1 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	assert_equal "$stderr" "ab-alloc: the engine's volume agentbox-engine has no usable org.agentbox.engine label"
	assert_equal "$(find "$AB_STATE_DIR/alloc" -mindepth 1 2>/dev/null | wc -l)" "$n"
	assert_equal "$(e2 docker volume ls -q --filter "label=org.agentbox.state=$(ab_state_sid)")" ""
	e2 docker volume rm agentbox-engine >/dev/null
	e2 docker volume create --label "org.agentbox.engine=$m2" agentbox-engine >/dev/null
}

@test "two engines with one key, so one /info ID, are still told apart" {
	local e3 m2 m3
	ab_engine_start e3 "$(ab_engine dir e2)/key.json"
	e3=$(ab_engine host e3)
	assert_equal "$(DOCKER_HOST=$e3 docker info --format '{{.ID}}')" \
		"$(e2 docker info --format '{{.ID}}')"
	e2_alloc
	m2=$(e2 ab_engine_mark)
	DOCKER_HOST=$e3 run_exact 0 ab-image build
	DOCKER_HOST=$e3 run_exact 0 ab-alloc --image "$output" --deadline "$DL"
	DOCKER_HOST=$e3 ab-clean "$output" 2>/dev/null
	m3=$(DOCKER_HOST=$e3 ab_engine_mark)
	[ -n "$m3" ] && [ "$m3" != "$m2" ]
	DOCKER_HOST=$e3 run_exact 1 ab-clean "$ALLOC"
	assert_equal "$stderr" "ab-clean: alloc:$AID lives on engine $m2, not on engine $m3 at $e3"
	assert_equal "$(e2 objects "$AID")" 4
	ab_engine_stop e3
}

@test "an image record names its engine; its handle on another engine is refused, naming both, and nothing is removed" {
	local m1 m2 rec=$AB_STATE_DIR/image/${E2_IMAGE#image:} n
	m2=$(e2 ab_engine_mark)
	grep -q "\"engine\":\"$m2\"" "$rec"
	grep -q "\"engine\":\"$(ab_engine_mark)\"" "$AB_STATE_DIR/image/${AB_IMAGE#image:}"
	m1=$(ab_engine_mark)
	n=$(docker images -q | wc -l)
	run_exact 1 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	assert_equal "$stderr" "ab-alloc: $E2_IMAGE lives on engine $m2, not on engine $m1 at unix:///var/run/docker.sock"
	run_exact 1 ab-image verify "$E2_IMAGE"
	assert_equal "$stderr" "ab-image: $E2_IMAGE lives on engine $m2, not on engine $m1 at unix:///var/run/docker.sock"
	run_exact 1 ab-image remove "$E2_IMAGE"
	assert_equal "$stderr" "ab-image: $E2_IMAGE lives on engine $m2, not on engine $m1 at unix:///var/run/docker.sock"
	[ -e "$rec" ]
	assert_equal "$(docker images -q | wc -l)" "$n"
	DOCKER_HOST=$E2 run_exact 0 ab-image verify "$E2_IMAGE"
	# Each engine reuses its own registered image alone.
	run_exact 0 ab-image build
	assert_output "$AB_IMAGE"
	DOCKER_HOST=$E2 run_exact 0 ab-image build
	assert_output "$E2_IMAGE"
}

@test "an image record made before engines were recorded: refused by the steps, never reused; ab-image remove removes it where its image is alone" {
	local old rec
	DOCKER_HOST=$E2 run_exact 0 ab-image build --rebuild
	old=$output rec=$AB_STATE_DIR/image/${output#image:}
	sed -i 's/"engine":"[0-9a-f]*",//' "$rec"
	run ! grep -q '"engine"' "$rec"
	DOCKER_HOST=$E2 run_exact 1 ab-alloc --image "$old" --deadline "$DL"
	assert_equal "$stderr" "ab-alloc: $old was registered before agentbox recorded engines: build the image again (ab-image build) and remove this one (ab-image remove) on the engine that holds it"
	DOCKER_HOST=$E2 run_exact 0 ab-image build
	assert_output "$E2_IMAGE"
	run_exact 1 ab-image remove "$old"
	assert_equal "$stderr" "ab-image: $old was registered before agentbox recorded engines, and its image is not on the engine at unix:///var/run/docker.sock: remove it on its own"
	[ -e "$rec" ]
	DOCKER_HOST=$E2 run_exact 0 ab-image remove "$old"
	[ ! -e "$rec" ]
}

@test "a docker CLI context picks the engine, by DOCKER_CONTEXT or currentContext; DOCKER_HOST wins over both" {
	local sid a b
	sid=$(ab_state_sid)
	export DOCKER_CONFIG=$BATS_TEST_TMPDIR/cfg
	docker context create e2 --docker "host=$E2" >/dev/null
	DOCKER_CONTEXT=e2 run_exact 0 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	a=$output
	assert_equal "$(e2 objects "${a#alloc:}")" 4
	assert_equal "$(objects "${a#alloc:}")" 0
	docker context use e2 >/dev/null
	run_exact 0 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	b=$output
	assert_equal "$(e2 objects "${b#alloc:}")" 4
	DOCKER_HOST=unix:///var/run/docker.sock run_exact 1 ab-clean "$a"
	assert_regex "$stderr" "^ab-clean: $a lives on engine [0-9a-f]{32}, not on engine [0-9a-f]{32} at unix:///var/run/docker\.sock$"
	run_exact 0 ab-clean "$a" "$b"
	DOCKER_CONTEXT=e2 run_exact 1 ab-export "$a"
	assert_equal "$(e2 objects "${a#alloc:}")" 0
	assert_equal "$(e2 objects "${b#alloc:}")" 0
}

@test "one state directory holds both engines' records side by side; each handle works on its own engine" {
	local h e
	e2_alloc
	e=$ALLOC
	run_exact 0 ab-alloc --image "$AB_IMAGE" --deadline "$DL"
	h=$output
	run_exact 0 ab-seed "$h" --repo "$BATS_TEST_TMPDIR/repo" \
		--commit "$(git -C "$BATS_TEST_TMPDIR/repo" rev-parse HEAD)" --deadline "$DL"
	[ -e "$AB_STATE_DIR/alloc/${h#alloc:}" ] && [ -e "$AB_STATE_DIR/alloc/${e#alloc:}" ]
	run_exact 0 ab-export "$h" -o "$BATS_TEST_TMPDIR/h.patch"
	DOCKER_HOST=$E2 run_exact 0 ab-export "$e" -o "$BATS_TEST_TMPDIR/e.patch"
	run_exact 0 ab-clean "$h"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$e"
	assert_equal "$(objects "${h#alloc:}")" 0
	assert_equal "$(e2 objects "${e#alloc:}")" 0
}

# The engine's egress networks (lib/egress/proxy.h), by the mark's label.
e2_egress_networks() {
	e2 docker network ls -q --no-trunc --filter label=org.agentbox.role=egress \
		--filter "label=org.agentbox.engine=$(e2 ab_engine_mark)"
}

e2_egress_alloc() {
	DOCKER_HOST=$E2 ab-alloc --image "$E2_IMAGE" --deadline "$DL" \
		--egress api.anthropic.com:443=192.0.2.1:443
}

# The network a proxy of the second engine is on, by ID.
e2_proxy_network() {
	e2 docker inspect "agentbox-${1#alloc:}-proxy" \
		--format '{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}'
}

# e2_network_like NAME LABEL-ICC: a network of the egress network's shape
# on the second engine, made through the API as a racing ab-alloc makes
# it; its ID.
e2_network_like() {
	curl -sf --unix-socket "${E2#unix://}" -H 'Content-Type: application/json' \
		-d "{\"Name\":\"$1\",\"CheckDuplicate\":true,\"Driver\":\"bridge\",\"Options\":{\"com.docker.network.bridge.enable_icc\":\"$2\"},\"Labels\":{\"org.agentbox.engine\":\"$(e2 ab_engine_mark)\",\"org.agentbox.role\":\"egress\"}}" \
		http://engine/networks/create | python3 -c 'import json, sys; print(json.load(sys.stdin)["Id"])'
}

# Made first on an engine of the test's own: on the host's, another suite
# may have its proxies on the network.
@test "an engine's first egress allocations, six at once in one state directory, make one egress network, and it outlives them" {
	local i net
	e2_egress_networks | xargs -r env DOCKER_HOST="$E2" docker network rm >/dev/null
	at_once 6 e2_egress_alloc
	net=$(e2_egress_networks)
	assert_equal "$(printf '%s\n' "$net" | wc -l)" 1
	assert_regex "$(e2 docker network inspect "$net" --format '{{.Name}}')" "^agentbox-egress-$(e2 ab_engine_mark)-[0-9a-f]{32}\$"
	for i in "${AT_ONCE[@]}"; do
		assert_equal "$(e2_proxy_network "$i")" "$net"
	done
	for i in "${AT_ONCE[@]}"; do
		DOCKER_HOST=$E2 run_exact 0 ab-clean "$i"
		assert_equal "$(e2 objects "${i#alloc:}")" 0
	done
	assert_equal "$(e2_egress_networks)" "$net"
}

# No lock spans state directories: the first allocations of two at once
# can each make one, each of a name of its own (the engine refuses to start
# a container on a name two networks share).  Every allocation then joins
# the lowest ID.
@test "two egress networks of one engine: an allocation joins the lowest ID, and neither is touched" {
	local before alloc made
	[ -n "$(e2_egress_networks)" ] || {
		alloc=$(e2_egress_alloc)
		DOCKER_HOST=$E2 run_exact 0 ab-clean "$alloc"
	}
	made=$(e2_network_like "agentbox-egress-$(e2 ab_engine_mark)-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" false)
	before=$(e2_egress_networks | sort)
	assert_equal "$(printf '%s\n' "$before" | wc -l)" 2
	alloc=$(e2_egress_alloc)
	assert_equal "$(e2_proxy_network "$alloc")" "$(printf '%s\n' "$before" | head -n 1)"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$alloc"
	assert_equal "$(e2_egress_networks | sort)" "$before"
	e2 docker network rm "$made" >/dev/null
}

@test "a network labelled as the egress network but not exactly it is never joined: ab-alloc makes its own, and leaves that one alone" {
	local odd alloc
	e2_egress_networks | xargs -r env DOCKER_HOST="$E2" docker network rm >/dev/null
	# Inter-container traffic on: not the egress network.
	odd=$(e2_network_like "agentbox-egress-$(e2 ab_engine_mark)-00000000000000000000000000000000" true)
	alloc=$(e2_egress_alloc)
	[ "$(e2_proxy_network "$alloc")" != "$odd" ]
	assert_equal "$(e2 docker network inspect "$(e2_proxy_network "$alloc")" --format '{{json .Options}}')" \
		'{"com.docker.network.bridge.enable_icc":"false"}'
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$alloc"
	e2 docker network inspect "$odd" >/dev/null
	e2 docker network rm "$odd" >/dev/null
}

@test "stopping the engines leaves the host's docker0 and packet filter as they were, and nothing of them" {
	local dir ns pid
	dir=$(ab_engine dir e2) ns=$(ab_engine ns e2) pid=$(ab_engine pid e2)
	ab_engines_stop
	run ab_host_net_unchanged
	assert_success
	run ip netns list
	refute_output --partial "$ns"
	[ ! -e "$dir" ]
	run kill -0 "$pid"
	assert_failure
}
