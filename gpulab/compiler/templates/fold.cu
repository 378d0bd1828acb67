// ---- In-order folds: the left value is always combined with the right --------
// The operator need only be associative: items are never reordered.
// `combine(a, b)` is the operator (or + for counts).

// Lane 0 receives x[0] op x[1] op ... op x[31]. At step d, lanes that are
// multiples of 2d hold the fold of their d lanes and add the next d lanes'.
template <typename T, typename Combine>
__device__ __forceinline__ T warp_fold(T x, Combine combine) {
    const int lane = lane_id();
    #pragma unroll
    for (int d = 1; d < WARP_THREADS; d *= 2) {
        T right = shuffle_down(x, d);
        if ((lane & (2 * d - 1)) == 0) x = combine(x, right);
    }
    return x;
}

// The same when some lanes hold no value (`has` false): they are skipped.
template <typename T, typename Combine>
__device__ __forceinline__ T warp_fold_partial(T x, bool& has, Combine combine) {
    const int lane = lane_id();
    #pragma unroll
    for (int d = 1; d < WARP_THREADS; d *= 2) {
        T right = shuffle_down(x, d);
        bool right_has = __shfl_down_sync(0xffffffffu, has, d) && lane + d < WARP_THREADS;
        if ((lane & (2 * d - 1)) == 0 && right_has) {
            x = has ? combine(x, right) : right;
            has = true;
        }
    }
    return x;
}

// Every lane receives x[0] op ... op x[lane] (an inclusive scan of the warp).
template <typename T, typename Combine>
__device__ __forceinline__ T warp_scan(T x, Combine combine) {
    const int lane = lane_id();
    #pragma unroll
    for (int d = 1; d < WARP_THREADS; d *= 2) {
        T left = shuffle_up(x, d);
        if (lane >= d) x = combine(left, x);
    }
    return x;
}

// Thread 0 receives the fold of the warps' values in warp order.
template <typename T, typename Combine>
__device__ __forceinline__ T block_fold(T warp_total, bool& has, Combine combine) {
    __shared__ T totals[WARPS_PER_BLOCK];
    __shared__ bool present[WARPS_PER_BLOCK];
    if (lane_id() == 0) {
        totals[warp_id()] = warp_total;
        present[warp_id()] = has;
    }
    __syncthreads();
    T x = totals[0];
    has = false;
    if (warp_id() == 0) {
        if (lane_id() < WARPS_PER_BLOCK) {
            x = totals[lane_id()];
            has = present[lane_id()];
        }
        x = warp_fold_partial(x, has, combine);
    }
    return x;
}
