// ---- Reduce: two passes, every fold in the input's order ---------------------
// Pass 1: block b folds the b-th contiguous share of the input (whole tiles)
// into partials[b]. Pass 2: one block folds the partials in order and puts
// the initial value on the left. Inputs of at most a few tiles skip pass 1.

struct Partials {
    const value_t* data;
};

__device__ __forceinline__ value_t load(const Partials& in, index_t i) { return in.data[i]; }
__device__ __forceinline__ bool can_vectorize(const Partials& in) {
    return reinterpret_cast<unsigned long long>(in.data) % (sizeof(value_t) * VEC) == 0;
}
__device__ __forceinline__ Vector<value_t, VEC> load_vector(const Partials& in, index_t i) {
    return *reinterpret_cast<const Vector<value_t, VEC>*>(in.data + i);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_reduce_partials(Input0 in, index_t n, value_t* partials, Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    // Block b takes tiles [b * q + min(b, r), ...): q each, one more for the first r.
    const unsigned int tiles = (unsigned int)((n + TILE - 1) / TILE);  // >= gridDim.x
    const unsigned int q = tiles / gridDim.x, r = tiles % gridDim.x;
    const unsigned int first_tile = blockIdx.x * q + min(blockIdx.x, r);
    const index_t begin = (index_t)first_tile * TILE;
    const index_t end = begin + (index_t)(q + (blockIdx.x < r)) * TILE;
    bool has;
    value_t total = block_fold_range(in, begin, end < n ? end : n, has, combine);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <typename In>
__device__ __forceinline__ void fold_all(const In& in, index_t n, value_t* out, value_t initial,
                                         const Uniforms& u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    bool has;
    value_t total = block_fold_range(in, 0, n, has, combine);
    if (threadIdx.x == 0) *out = has ? op(initial, total, u) : initial;
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_reduce_final(Partials partials, index_t count, value_t* out, value_t initial, Uniforms u) {
    fold_all(partials, count, out, initial, u);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_reduce_single(Input0 in, index_t n, value_t* out, value_t initial, Uniforms u) {
    fold_all(in, n, out, initial, u);
}
