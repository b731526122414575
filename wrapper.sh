#!/bin/bash
if [ "$OMPI_COMM_WORLD_LOCAL_RANK" != 0 ]; then unset PDCBB_SERVER_DIRS; export PDCBB_JOB_DIR=/nonexistent; fi
exec "$@"
