// ---- Map: out[i] = f(in0[i], ...) -------------------------------------------
// Block b writes items [b * TILE, (b + 1) * TILE): each thread handles UNROLL
// vectors of VEC items, so a full tile of aligned contiguous arrays moves in
// 16-byte coalesced loads and stores. Other tiles go item by item.

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
gpulab_map($PARAMS, Output out, index_t n, Uniforms u) {
    const index_t base = (index_t)blockIdx.x * TILE;
    if constexpr (VEC > 1) {
        if (base + TILE <= n && $CAN_VECTORIZE) {
            #pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                const index_t i = base + (index_t)(k * BLOCK_THREADS + threadIdx.x) * VEC;
$LOAD_VECTORS
                Vector<out_t, VEC> result;
                #pragma unroll
                for (int j = 0; j < VEC; ++j) result.item[j] = apply($VECTOR_ITEMS, u);
                store_vector(out, i, result);
            }
            return;
        }
    }
    #pragma unroll 1
    for (int k = 0; k < UNROLL * VEC; ++k) {
        const index_t i = base + (index_t)k * BLOCK_THREADS + threadIdx.x;
        if (i < n) store(out, i, apply($SCALAR_ITEMS, u));
    }
}
