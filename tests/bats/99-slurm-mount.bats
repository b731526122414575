#!/usr/bin/env bats
# The job's filesystem under Slurm (`--pdc=...,mount`; 3 nodes by scripts/slurm-cluster.sh, each
# node's local storage private to it, the SPANK plugin): every node's prolog starts the mount
# as the job user once the daemons run, every task (the batch script too) finds it at
# $PDCBB_MOUNT; unchanged programs (an MPI program under srun --mpi=pmix whose ranks on
# different nodes read each other's files, fio, a libhdf5 C program) work through it; the drain
# keeps the files as files; another user cannot enter it; a mount process killed during the job
# gives programs an error and the epilog leaves the node clean; a mount that cannot start fails
# the job's tasks with its reason and drains no node.

load helpers
load slurm_helpers

setup_file() {
    fuse_for_users
    pdc_cluster_start
    cp "$SITE/site.yaml" "$SITE/site.yaml.good"
}

teardown_file() {
    pdc_cluster_stop
}

teardown() {
    cp "$SITE/site.yaml.good" "$SITE/site.yaml"
    chmod 644 "$SITE/site.yaml"
}

# Fail if a node still has a mount under the nodes' local root or a pdcbb_mount runs.
no_mounts_left() {
    local n
    for n in n1 n2 n3; do
        if on_node "$n" grep " $LOCAL/" /proc/self/mountinfo; then
            echo "$n still has a mount under $LOCAL" >&2
            return 1
        fi
    done
    [ -z "$(pgrep -f "pdcbb_mount .*$LOCAL/" || true)" ]
}

@test "an unchanged job script with --pdc=...,mount: MPI ranks on 3 nodes, fio and libhdf5 through \$PDCBB_MOUNT; the drain has the same files" {
    run_job pdcbbtest "
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
echo mount=\$PDCBB_MOUNT
stat -c 'mnt %U %a' \$PDCBB_MOUNT
mkdir \$PDCBB_MOUNT/out
timeout 120 srun --mpi=pmix -N3 -n3 $SITE/bin/mpi_file_exchange \$PDCBB_MOUNT/out; echo mpi_exit=\$?
timeout 120 srun -N1 -n1 -w n2 fio --name=seq --directory=\$PDCBB_MOUNT/out --rw=write --bs=1M \
    --size=32M --verify=crc32c --verify_state_save=0 --do_verify=1 --minimal > /dev/null; echo fio_exit=\$?
timeout 120 srun -N1 -n1 -w n3 fio --name=seq --directory=\$PDCBB_MOUNT/out --rw=read --bs=1M \
    --size=32M --verify=crc32c --verify_state_save=0 --verify_only=1 --minimal > /dev/null; echo fio_verify_exit=\$?
timeout 60 srun -N1 -n1 -w n1 $SITE/bin/hdf5_file_check write \$PDCBB_MOUNT/out/t.h5 300
timeout 60 srun -N1 -n1 -w n3 $SITE/bin/hdf5_file_check read \$PDCBB_MOUNT/out/t.h5 300; echo h5_exit=\$?
timeout 60 srun -N1 -n1 -w n2 sh -c 'cd \$PDCBB_MOUNT/out && sha256sum rank-*.dat seq.0.0 t.h5' > $SITE/out/sums.\$SLURM_JOB_ID
srun -N3 -n3 sh -c 'grep -c \" \$PDCBB_MOUNT \" /proc/self/mountinfo' | sed 's/^/mounted: /'
# cp -r, tar and dd on one node, checked on another; NumPy and h5py the same way
timeout 60 srun -N1 -n1 -w n1 sh -c 'cp -r /usr/share/doc/bash \$PDCBB_MOUNT/doc && tar -C /usr/share/doc -cf \$PDCBB_MOUNT/doc.tar bash && dd if=/dev/urandom of=\$PDCBB_MOUNT/dd.bin bs=1M count=5 status=none && sha256sum \$PDCBB_MOUNT/dd.bin' > $SITE/out/dd.\$SLURM_JOB_ID
timeout 60 srun -N1 -n1 -w n3 sh -c 'diff -r /usr/share/doc/bash \$PDCBB_MOUNT/doc && tar -tf \$PDCBB_MOUNT/doc.tar | grep -c . && sha256sum \$PDCBB_MOUNT/dd.bin' > $SITE/out/dd3.\$SLURM_JOB_ID; echo copies_exit=\$?
timeout 60 srun -N1 -n1 -w n2 /usr/bin/python3 -c 'import os, numpy, h5py; m = os.environ[\"PDCBB_MOUNT\"]; numpy.save(m + \"/a.npy\", numpy.arange(100000.0)); f = h5py.File(m + \"/b.h5\", \"w\"); f[\"x\"] = numpy.arange(5000); f.close()'
timeout 60 srun -N1 -n1 -w n1 /usr/bin/python3 -c 'import os, numpy, h5py; m = os.environ[\"PDCBB_MOUNT\"]; assert (numpy.load(m + \"/a.npy\") == numpy.arange(100000.0)).all(); assert (h5py.File(m + \"/b.h5\", \"r\")[\"x\"][:] == numpy.arange(5000)).all(); print(\"python ok\")'
" -N3 --pdc=capacity=1G,drain=$SITE/drain,mount
    echo "$OUT"
    grep -q "^mount=$LOCAL/pdcbb.$JOB/mnt$" <<<"$OUT"
    grep -q "^mnt pdcbbtest 700$" <<<"$OUT"
    for r in 0 1 2; do
        grep -Eq "^rank $r of 3 on .*: wrote 3145745 bytes, read 2 files: ok$" <<<"$OUT"
    done
    # the ranks ran on three different nodes
    [ "$(grep -E '^rank [0-9] of 3 on ' <<<"$OUT" | awk '{print $6}' | sort -u | wc -l)" -eq 3 ]
    for k in mpi fio fio_verify h5 copies; do grep -q "^${k}_exit=0$" <<<"$OUT"; done
    grep -q "^python ok$" <<<"$OUT"
    [ "$(awk '{print $1}' "$SITE/out/dd.$JOB")" = "$(tail -1 "$SITE/out/dd3.$JOB" | awk '{print $1}')" ]
    [ "$(grep -c '^mounted: 1$' <<<"$OUT")" -eq 3 ]
    no_daemons_left
    no_mounts_left
    nodes_idle
    # after the job: the same files, checked, in the drain
    local files="$SITE/drain/pdcbb.$JOB/files/out"
    [ -s "$SITE/out/sums.$JOB" ]
    (cd "$files" && sha256sum -c "$SITE/out/sums.$JOB")
    run "$BUILD_DIR/tests/hdf5_file_check" read "$files/t.h5" 300
    assert_success
}

@test "another user cannot enter a running job's mount; the mount process killed: an error, never a hang, and the epilog cleans the node" {
    local S="$SITE/out/hold.$RANDOM.sh"
    cat > "$S" <<EOF
#!/bin/bash
export LD_LIBRARY_PATH=$SITE/lib UCX_WARN_UNUSED_ENV_VARS=n
echo before > \$PDCBB_MOUNT/before
touch $SITE/out/ready.\$SLURM_JOB_ID
for i in \$(seq 600); do [ -e $SITE/out/go.\$SLURM_JOB_ID ] && break; sleep 0.1; done
timeout 20 srun -N1 -n1 -w n2 sh -c 'ls \$PDCBB_MOUNT; echo n2_ls_exit=\$?' 2>&1
timeout 20 srun -N1 -n1 -w n3 sh -c 'cat \$PDCBB_MOUNT/before; echo n3_cat_exit=\$?' 2>&1
EOF
    chmod 755 "$S"
    JOB="$(runuser -u pdcbbtest -- sbatch --parsable -o "$SITE/out/%j.out" -N3 \
        --pdc=capacity=1G,mount=yes "$S")"
    for _ in $(seq 300); do [ -e "$SITE/out/ready.$JOB" ] && break; sleep 0.2; done
    [ -e "$SITE/out/ready.$JOB" ]
    local mnt="$LOCAL/pdcbb.$JOB/mnt"
    # the other user: not into the mount point, not into a file whose path it guesses
    run on_node n1 runuser -u pdcbbtest2 -- ls "$mnt"
    assert_failure
    assert_output --partial "Permission denied"
    run on_node n1 runuser -u pdcbbtest2 -- cat "$mnt/before"
    assert_failure
    assert_output --partial "Permission denied"
    run on_node n1 runuser -u pdcbbtest -- cat "$mnt/before"
    assert_output "before"
    # the FUSE side of node 2 killed
    local pid
    pid="$(cat "$(node_dir n2)/pdcbb.$JOB/mount.pid")"
    kill -9 "$pid"
    touch "$SITE/out/go.$JOB"
    wait_job "$JOB"
    echo "$OUT"
    grep -q "Transport endpoint is not connected" <<<"$OUT"
    grep -q "^n2_ls_exit=2$" <<<"$OUT"
    grep -q "^before$" <<<"$OUT"          # node 3 still serves
    grep -q "^n3_cat_exit=0$" <<<"$OUT"
    no_daemons_left
    no_mounts_left
    nodes_idle
}

@test "a mount that cannot start fails the job's tasks with its reason; no node is drained; a bad value is refused at submission" {
    sed -i "s|^mount_path: .*|mount_path: /no/such/pdcbb_mount|" "$SITE/site.yaml"
    run_job pdcbbtest "echo batch_ran" -N3 --pdc=capacity=1G,mount
    echo "$OUT"
    grep -q "pdcbb: job $JOB not run: node n[123]: the filesystem did not start at $LOCAL/pdcbb.$JOB/mnt: cannot execute /no/such/pdcbb_mount: No such file or directory (see $LOCAL/pdcbb.$JOB/mount.log)" <<<"$OUT"
    ! grep -q "batch_ran" <<<"$OUT"
    no_daemons_left
    no_mounts_left
    nodes_idle
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=mount=on --wrap true
    assert_failure
    assert_output --partial "key 'mount': bad value 'on' (use yes or no)"
}

@test "USER-GUIDE.md's batch script with mount runs as printed (the drain destination made this cluster's)" {
    local block S="$SITE/out/guide-mount.sh"
    block="$(awk '/^## / {insec = ($0 == "## Files through the mount"); next}
                  insec && /^```bash$/ {take = 1; next} take && /^```$/ {exit} take {print}' \
        "$REPO_DIR/docs/USER-GUIDE.md")"
    grep -q -- "--pdc=.*,mount$" <<<"$block"
    sed "s#/scratch/me/run1#$SITE/drain#g" <<<"$block" > "$S"
    chmod 755 "$S"
    JOB="$(runuser -u pdcbbtest -- sbatch --parsable -o "$SITE/out/%j.out" "$S")"
    wait_job "$JOB"
    echo "$OUT"
    [ "$(grep -Ex 'n[0-9]+' <<<"$OUT" | sort | tr '\n' ' ')" = "n1 n2 " ]
    [ "$(ls "$SITE/drain/pdcbb.$JOB/files/ckpt")" = "$(printf 'n1\nn2')" ]
    [ -s "$SITE/drain/pdcbb.$JOB/files/ckpt/n2" ]
    no_daemons_left
    no_mounts_left
    nodes_idle
}

@test "stage_in_files: an input tree is in the mount on every node before the first task; a missing one is refused at submission" {
    local in="$SITE/drain/in.$RANDOM"
    mkdir -p "$in/sub"
    head -c 3000000 /dev/urandom > "$in/sub/data.bin"
    echo "input" > "$in/a.txt"
    chown -R pdcbbtest "$in"
    run_job pdcbbtest "srun -N3 -n3 sh -c 'diff -r $in \$PDCBB_MOUNT && echo \$SLURMD_NODENAME has the inputs'" \
        -N3 --pdc=capacity=1G,mount,stage_in_files=$in
    echo "$OUT"
    [ "$(grep -Ec '^n[123] has the inputs$' <<<"$OUT")" -eq 3 ]
    no_daemons_left
    no_mounts_left
    nodes_idle
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=mount,stage_in_files=$SITE/drain/none --wrap true
    assert_failure
    assert_output --partial "key 'stage_in_files': $SITE/drain/none: no such directory"
}

@test "stage_in of a mount job's drain: a later 3-node job's mount has its files on every node, and drains them again" {
    run_job pdcbbtest "
cd \$PDCBB_MOUNT && mkdir -p in/deep && echo first > in/a.txt && ln -s a.txt in/link
timeout 60 srun -N1 -n1 -w n2 sh -c 'head -c 3000000 /dev/urandom > \$PDCBB_MOUNT/in/deep/n2.bin'
echo wrote" -N2 --pdc=capacity=1G,drain=$SITE/drain,mount
    echo "$OUT"
    grep -q "^wrote$" <<<"$OUT"
    local first=$JOB src="$SITE/drain/pdcbb.$JOB"
    [ -f "$src/COMPLETE" ]
    no_daemons_left
    run_job pdcbbtest "
srun -N3 -n3 sh -c 'diff -r $src/files \$PDCBB_MOUNT && echo \$SLURMD_NODENAME has the drained files'
echo second >> \$PDCBB_MOUNT/in/a.txt" -N3 --pdc=capacity=1G,drain=$SITE/drain,mount,stage_in=$src
    echo "$OUT"
    [ "$JOB" != "$first" ]
    [ "$(grep -Ec '^n[123] has the drained files$' <<<"$OUT")" -eq 3 ]
    no_daemons_left
    no_mounts_left
    nodes_idle
    # the second job's drain: the staged files with its change
    local out="$SITE/drain/pdcbb.$JOB/files"
    printf 'first\nsecond\n' | cmp - "$out/in/a.txt"
    cmp "$src/files/in/deep/n2.bin" "$out/in/deep/n2.bin"
    [ "$(readlink "$out/in/link")" = a.txt ]
    run "$PDCBB" verify --owner pdcbbtest "$SITE/drain/pdcbb.$JOB"
    assert_success
}
