// ---- Reduce: one launch, every fold in the input's order ---------------------
// A grid of G blocks: block b folds the b-th contiguous share of the input
// (whole tiles) into partials[b]. The last block to finish (it counts the
// finished blocks in `finished`, which wraps back to 0 for the next launch)
// folds the G partials in order, puts the initial value on the left and
// writes the result. A grid of one block folds everything itself.

// The block folds the `count` contiguous values at `values` in order: thread t
// folds a run of them, then the runs are folded in thread order.
template <typename Combine>
__device__ __forceinline__ value_t block_fold_values(const value_t* values, unsigned int count, bool& has,
                                                     Combine combine) {
    const unsigned int run = (count + BLOCK_THREADS - 1) / BLOCK_THREADS;
    const unsigned int first = threadIdx.x * run, last = min(first + run, count);
    value_t x = value_t();
    has = false;
    #pragma unroll 1
    for (unsigned int i = first; i < last; ++i) {
        x = has ? combine(x, values[i]) : values[i];
        has = true;
    }
    x = warp_fold_partial(x, has, combine);
    return block_fold(x, has, combine);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_reduce(Input0 in, index_t n, value_t* out, value_t* partials, unsigned int* finished, value_t initial,
              Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    __shared__ bool last;
    index_t begin = 0, end = n;
    if (gridDim.x > 1) {
        // Block b takes tiles [b * q + min(b, r), ...): q each, one more for the first r.
        const unsigned int tiles = (unsigned int)((n + TILE - 1) / TILE);  // >= gridDim.x
        const unsigned int q = tiles / gridDim.x, r = tiles % gridDim.x;
        begin = (index_t)(blockIdx.x * q + min(blockIdx.x, r)) * TILE;
        const index_t share_end = begin + (index_t)(q + (blockIdx.x < r)) * TILE;
        end = share_end < n ? share_end : n;
    }
    bool has;
    value_t total = block_fold_range(in, begin, end, has, combine);
    if (gridDim.x > 1) {
        if (threadIdx.x == 0) {
            partials[blockIdx.x] = total;
            __threadfence();  // the partial is visible before the count says so
            last = atomicInc(finished, gridDim.x - 1) == gridDim.x - 1;
            if (last) __threadfence();  // and every other block's partial before this block reads them
        }
        __syncthreads();
        if (!last) return;
        total = block_fold_values(partials, gridDim.x, has, combine);
    }
    if (threadIdx.x == 0) *out = has ? op(initial, total, u) : initial;
}
