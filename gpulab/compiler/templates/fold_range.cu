// ---- A block folds one tile of the input, in order ----------------------------
// A tile is TILE items: warp w folds the w-th WARP_TILE of it, then the warps'
// results are folded in order (block_fold). There is no loop over the input:
// each block reads one fixed share, with every load in flight before the first
// fold, and the last block folds the blocks' results (reduce.cu; a shuffle in
// a loop would get a called slow path on sm_80-89, common.cu).
//
// A warp tile is UNROLL coalesced rows of 32 vectors: lane l folds vector l of
// each row, one warp fold per row combines the lanes (the rows' folds are
// independent, so their shuffles overlap), and the rows are combined in order.
// The rows are read ROWS_IN_FLIGHT at a time (all of them unless a tuning
// says fewer): more rows per block pay the block's tail (reduce.cu) once for
// more items, fewer rows in flight keep the registers for more blocks per SM.
// The warp's items from `first` on are all there, in aligned vectors.
template <typename In, typename Combine>
__device__ __forceinline__ value_t warp_fold_vectors(const In& in, index_t first, Combine combine) {
    const int lane = lane_id();
    value_t acc = value_t();
#if PORTABLE_ORDER
    value_t rows[log2_of(UNROLL) + 1];  // the rows' pairwise trees so far (order.cu: push)
#endif
    #pragma unroll
    for (int batch = 0; batch < UNROLL; batch += ROWS_IN_FLIGHT) {
        value_t row[ROWS_IN_FLIGHT];
        Vector<value_t, VEC> v[ROWS_IN_FLIGHT];
        #pragma unroll
        for (int k = 0; k < ROWS_IN_FLIGHT; ++k) {
            if (batch + k < UNROLL) v[k] = load_vector(in, first + (index_t)((batch + k) * WARP_THREADS + lane) * VEC);
        }
        #pragma unroll
        for (int k = 0; k < ROWS_IN_FLIGHT; ++k) {
            if (batch + k < UNROLL) {  // known when unrolled: no branch is left
#if PORTABLE_ORDER
                row[k] = pairwise(v[k].item, combine);  // the vector's items pairwise (order.cu)
#else
                row[k] = v[k].item[0];
                #pragma unroll
                for (int j = 1; j < VEC; ++j) row[k] = combine(row[k], v[k].item[j]);
#endif
                row[k] = warp_fold(row[k], combine);
            }
        }
        #pragma unroll
        for (int k = 0; k < ROWS_IN_FLIGHT; ++k) {
#if PORTABLE_ORDER
            if (batch + k < UNROLL) push(rows, batch + k, row[k], true, combine);  // the rows pairwise
#else
            if (batch + k < UNROLL) acc = batch + k == 0 ? row[k] : combine(acc, row[k]);
#endif
        }
    }
#if PORTABLE_ORDER
    acc = rows[log2_of(UNROLL)];
#endif
    return acc;
}

// The last tile, or input that cannot be read in vectors: the warp tile from
// `first`, item by item, below n. Every lane reads (an index past the end
// reads the last item instead) and a select drops what is not there, so no
// branch sits between the shuffles.
template <typename In, typename Combine>
__device__ __forceinline__ value_t warp_fold_items(const In& in, index_t first, index_t n, bool& has,
                                                   Combine combine) {
    const int lane = lane_id();
    const index_t last = n - 1;
    value_t acc = value_t();
    has = false;
    #pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const index_t at = first + (index_t)(k * WARP_THREADS + lane) * VEC;  // this lane's first item of row k
        bool lane_has = at <= last;
        value_t row = load(in, at < last ? at : last);
        #pragma unroll
        for (int j = 1; j < VEC; ++j) {
            const value_t joined = combine(row, load(in, at + j < last ? at + j : last));
            row = at + j <= last ? joined : row;
        }
        row = warp_fold_partial(row, lane_has, combine);
        const value_t joined = combine(acc, row);
        acc = lane_has ? (has ? joined : row) : acc;
        has = has || lane_has;
    }
    return acc;
}

// A range of at most REDUCE_ROW items (a small input, a short last tile, few
// partials): thread t folds the VEC items from base + t * VEC, so that one row,
// read by every warp at once, is all the block reads and folds; the warp tiles
// would read sixteen times as many, nearly all past the end.
template <typename In, typename Combine>
__device__ __forceinline__ value_t warp_fold_row(const In& in, index_t base, index_t n, bool& has,
                                                 Combine combine) {
    const index_t last = n - 1, at = base + (index_t)threadIdx.x * VEC;
    has = at <= last;
    value_t x = load(in, at < last ? at : last);
    #pragma unroll
    for (int j = 1; j < VEC; ++j) {
        const value_t joined = combine(x, load(in, at + j < last ? at + j : last));
        x = at + j <= last ? joined : x;
    }
    return warp_fold_partial(x, has, combine);
}

// Thread 0 receives the fold of the items [base, base + TILE) below n, item by
// item; `has` says whether there was any.
template <typename In, typename Combine>
__device__ __forceinline__ value_t block_fold_items(const In& in, index_t base, index_t n, bool& has,
                                                    Combine combine) {
    value_t x;
    if (n - base <= REDUCE_ROW) {  // the same for the whole block
        x = warp_fold_row(in, base, n, has, combine);
    } else {
        x = warp_fold_items(in, base + (index_t)warp_id() * WARP_TILE, n, has, combine);
    }
    return block_fold(x, has, combine);
}

// The same, in vectors where the tile is whole and the input can be read so.
template <typename In, typename Combine>
__device__ __forceinline__ value_t block_fold_tile(const In& in, index_t base, index_t n, bool& has,
                                                   Combine combine) {
    if (n - base >= TILE && can_vectorize(in)) {  // the same for the whole block
        has = true;
        return block_fold(warp_fold_vectors(in, base + (index_t)warp_id() * WARP_TILE, combine), has, combine);
    }
    return block_fold_items(in, base, n, has, combine);
}
