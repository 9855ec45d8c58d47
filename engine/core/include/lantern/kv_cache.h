// lantern/kv_cache.h — the paged KV cache's vocabulary: sequences, statistics, the block map.
//
// K and V of every past token live in fixed-size blocks (default 16 tokens) from one device pool.
// Each sequence has a block table. Full blocks are identified by a chained hash (parent block's
// hash + the block's token ids + model identity) and stay cached after their sequence ends
// (refcount 0, in an LRU queue) so a later prompt with the same prefix reuses them. Blocks in use
// are never evicted; never-used blocks are handed out before any cached block is evicted.
#pragma once
#include <cstdint>
#include <vector>

namespace lantern {

using SequenceId = uint32_t;

struct KvSequenceStats {
    SequenceId id = 0;
    uint32_t tokens = 0, blocks = 0;
};

struct KvStats {
    uint32_t block_tokens = 0;  // tokens per block
    uint32_t total_blocks = 0;
    uint32_t used_blocks = 0;    // refcount > 0
    uint32_t cached_blocks = 0;  // refcount 0 but holding a reusable full block
    uint32_t empty_blocks = 0;   // never used or evicted
    uint64_t capacity_tokens = 0, capacity_bytes = 0;
    uint64_t bytes_per_token = 0;  // 2 x layers x kv_heads x head_dim x element bytes
    uint32_t layers = 0, kv_heads = 0, head_dim = 0, element_bytes = 0;
    uint64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;  // cumulative
    uint32_t last_query_tokens = 0, last_hit_tokens = 0;      // last prefill
    uint64_t evictions = 0;
    uint32_t peak_used_blocks = 0;
    std::vector<KvSequenceStats> sequences;
    // Sliding-window layers with a pool of their own (Gemma's local layers; local_layers 0: none):
    // each sequence there holds only the blocks of its last `window` positions. bytes_per_token and
    // capacity_bytes above then count the other layers only.
    uint32_t window = 0, local_layers = 0;
    uint32_t local_total_blocks = 0, local_used_blocks = 0;
    uint64_t local_capacity_bytes = 0;
};

struct KvBlockInfo {
    uint32_t block = 0;
    std::vector<SequenceId> owners;  // sequences whose table holds this block
    uint32_t filled = 0;             // tokens written (0..block_tokens)
    bool cached = false;             // full, hashed, refcount 0 (reusable)
    bool full_hashed = false;        // full and registered in the prefix cache
    int32_t first_position = -1;     // position of its first token in its (first) owner, -1 if none
};

}  // namespace lantern
