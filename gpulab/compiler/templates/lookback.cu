// ---- Decoupled look-back, deterministic ---------------------------------------
// Single-pass scans (Merrill & Garland, 2016): tile i publishes its aggregate
// A(i), the fold of its own items, as soon as it has it; then it finds its
// exclusive prefix from its predecessors' published values, and publishes its
// inclusive prefix P(i). The classic look-back stops at the nearest tile that
// has published its P; which tile that is depends on timing, and so would the
// grouping of a float sum: the same input would give other bits on the next
// run. Here a tile always looks back a window of W = LOOKBACK_TILES tiles:
//
//     prefix(i) = P(i - W)  op  A(i - W + 1)  op ...  op  A(i - 1)
//     P(i)      = prefix(i) op  A(i)
//
// (for i < W the window starts at tile 0, with the initial value on its
// left), folded in one fixed shape. Every grouping then depends only on i, so
// results are run-to-run deterministic, for floats as for integers: one code
// path for every type.
//
// The window's size: each thread reads its slots of the window at once, so a
// tile waits about one round trip to memory for them whatever W is, and
// known prefixes move W tiles ahead per round trip (the classic look-back:
// at most one warp's 32). A bigger W costs a longer fold, of W values.
//
// Every value travels in 64-bit words, 32 value bits beside the launch's
// epoch (value << 32 | epoch): one word for values of up to 4 bytes, two for
// 8 bytes... A word is written and read whole, so a reader that sees the
// epoch in every word of a value has the value: no flag, no fence. The host
// passes a new epoch to each launch, so the words need clearing only when the
// epochs start again, once in 2^30 - 1 launches (primitives/lookback.py).

template <typename T>
struct TileStatus {
    unsigned long long* aggregate;  // per tile A(t), STATUS_WORDS(T) words each
    unsigned long long* inclusive;  // per tile P(t)
};

template <typename T>
__device__ constexpr int status_words() { return (sizeof(T) + 3) / 4; }

// Loads and stores at GPU scope: coherent across blocks, with no ordering.
__device__ __forceinline__ unsigned long long load_relaxed(const unsigned long long* p) {
    unsigned long long value;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(p) : "memory");
    return value;
}

__device__ __forceinline__ void store_relaxed(unsigned long long* p, unsigned long long value) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(value) : "memory");
}

// Publish tile t's value in `words` (the aggregates or the inclusive prefixes).
template <typename T>
__device__ __forceinline__ void publish(unsigned long long* words, long long t, unsigned int epoch, T value) {
    unsigned int bits[status_words<T>()] = {};
    memcpy(bits, &value, sizeof(T));
    #pragma unroll
    for (int w = 0; w < status_words<T>(); ++w)
        store_relaxed(words + t * status_words<T>() + w, (unsigned long long)bits[w] << 32 | epoch);
}

// Whether tile t has published its value in `words` in this launch; if so, it is in `value`.
template <typename T>
__device__ __forceinline__ bool try_read(const unsigned long long* words, long long t, unsigned int epoch, T& value) {
    unsigned int bits[status_words<T>()];
    bool ready = true;
    #pragma unroll
    for (int w = 0; w < status_words<T>(); ++w) {
        const unsigned long long word = load_relaxed(words + t * status_words<T>() + w);
        ready = ready && (unsigned int)word == epoch;
        bits[w] = (unsigned int)(word >> 32);
    }
    memcpy(&value, bits, sizeof(T));
    return ready;
}

#define LOOKBACK_SLOTS ((LOOKBACK_TILES + BLOCK_THREADS - 1) / BLOCK_THREADS)  // window slots per thread
#define LOOKBACK_GROUPS ((LOOKBACK_TILES + LOOKBACK_GROUP - 1) / LOOKBACK_GROUP)

// prefix(tile) as above, without the initial value, for thread 0; false when
// nothing comes before the tile (tile 0). Called by every thread (it has
// barriers), after the tile published its aggregate.
//
// Slot s of the window is tile (tile - W + s): slot 0 its P, the others their
// A. Each thread waits for its slots on its own; then groups of LOOKBACK_GROUP slots are
// folded left to right by one thread each, then the groups by thread 0. The
// fold goes through shared memory, not shuffles: after a loop that waits on
// other blocks, ptxas cannot prove a warp whole again (common.cu).
template <typename T, typename Combine>
__device__ __forceinline__ bool look_back(const TileStatus<T>& status, long long tile, unsigned int epoch, T& prefix,
                                          Combine combine) {
    __shared__ T window[LOOKBACK_TILES];
    __shared__ T groups[LOOKBACK_GROUPS];
    __shared__ bool group_has[LOOKBACK_GROUPS];
    const long long start = tile - LOOKBACK_TILES;
    #pragma unroll
    for (int j = 0; j < LOOKBACK_SLOTS; ++j) {
        const int s = j * BLOCK_THREADS + threadIdx.x;
        if (s < LOOKBACK_TILES && start + s >= 0) {
            const unsigned long long* words = s == 0 ? status.inclusive : status.aggregate;
            T value;
            while (!try_read(words, start + s, epoch, value)) {
            }
            window[s] = value;
        }
    }
    __syncthreads();
    const int present = start < 0 ? (int)-start : 0;  // the first slot that is a tile
    if (threadIdx.x < LOOKBACK_GROUPS) {
        T x = T();
        bool any = false;
        #pragma unroll
        for (int j = 0; j < LOOKBACK_GROUP; ++j) {
            const int s = threadIdx.x * LOOKBACK_GROUP + j;
            if (s >= present && s < LOOKBACK_TILES) {
                x = any ? combine(x, window[s]) : window[s];
                any = true;
            }
        }
        groups[threadIdx.x] = x;
        group_has[threadIdx.x] = any;
    }
    __syncthreads();
    bool has = false;
    if (threadIdx.x == 0) {
        for (int g = 0; g < LOOKBACK_GROUPS; ++g) {
            if (group_has[g]) {
                prefix = has ? combine(prefix, groups[g]) : groups[g];
                has = true;
            }
        }
    }
    return has;
}
