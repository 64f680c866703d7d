set -o pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B bq -DCMAKE_BUILD_TYPE=Release -DGMPI_WERROR=ON -DGMPI_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGMPI_TEST_GPU_RANKS=1 -DGMPI_TEST_SHARED_GPU_RANKS="2;4" > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
cmake --build bq -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
cd bq
timeout 420 ctest -R "test_p2p|test_progress|test_plan" -E "valgrind|chunked|pool" -L "cuda|shared" --timeout 60 -j4 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "Test +#|tests passed|tests failed" $OUT/ctest.log
cd ..; GMPI_BACKEND=cuda timeout 60 scripts/mpirun -n 4 scripts/shared-gpu-rank bq/tools/p2p_peers 2>&1 | tail -8
GMPI_DEVICE_P2P=nccl GMPI_BACKEND=cuda timeout 90 scripts/mpirun -n 4 scripts/shared-gpu-rank bq/tools/p2p_peers 2>&1 | tail -8
