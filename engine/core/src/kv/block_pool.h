// Paged KV cache bookkeeping (host side): which physical block holds which tokens of which
// sequence, the prefix cache, and the LRU free queue. The device memory itself is owned by the
// model (one K and one V pool per layer); this class only hands out block ids and slots.
//
// Free queue order: blocks that hold nothing reusable (never used, or evicted) are at the front,
// cached full blocks at the back in the order they were freed (least recently used first). So
// allocation takes empty blocks first and only then evicts the least recently used cached block.
// Blocks with refcount > 0 are never in the queue and so are never evicted.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "lantern/kv_cache.h"

namespace lantern::kv {

class BlockPool {
public:
    BlockPool(uint32_t num_blocks, uint32_t block_tokens, uint64_t model_identity);

    uint32_t block_tokens() const { return block_tokens_; }
    uint32_t num_blocks() const { return static_cast<uint32_t>(blocks_.size()); }

    SequenceId create_sequence();
    // Shares every full block of `from` (refcount + 1); returns the new sequence and how many
    // tokens it holds (a multiple of block_tokens). The caller recomputes the rest.
    SequenceId fork(SequenceId from, uint32_t* shared_tokens);
    void free_sequence(SequenceId seq);
    bool has_sequence(SequenceId seq) const { return seqs_.count(seq) != 0; }

    // Reuses cached full blocks matching the start of `prompt` for an empty sequence. Always leaves
    // at least the last prompt token to compute. Returns the number of tokens reused.
    // `limit`: reuse at most that many tokens (the blocks a sliding window still has, see Engine).
    uint32_t reuse_prefix(SequenceId seq, std::span<const int32_t> prompt, uint32_t limit = UINT32_MAX);
    // What reuse_prefix would reuse for `prompt`, changing nothing. `idle_blocks` gets how many of
    // those blocks are free now (cached: reusing them takes them off the free queue).
    uint32_t peek_prefix(std::span<const int32_t> prompt, uint32_t* idle_blocks = nullptr) const;
    // Blocks needed to append n tokens to seq (0 if they fit in its last block).
    uint32_t blocks_needed(SequenceId seq, uint32_t n) const;
    uint32_t free_blocks() const { return static_cast<uint32_t>(free_queue_.size()); }
    // Work that must leave no trace in the statistics (Engine::warm_up) puts the peak back.
    uint32_t peak_used_blocks() const { return peak_used_; }
    void restore_peak_used_blocks(uint32_t peak) { peak_used_ = peak; }
    // Appends tokens: allocates blocks, returns the physical slot of each new token.
    // Throws Error(ContextFull) (and changes nothing) when the pool cannot supply the blocks.
    std::vector<uint32_t> append(SequenceId seq, std::span<const int32_t> tokens);
    // Drops the last n tokens (e.g. a step that failed), releasing emptied blocks. The dropped tokens
    // count as never computed: this sequence's own blocks that lose tokens leave the prefix cache.
    // Throws Error(InvalidArgument) (and changes nothing) when the cut would leave a partial block
    // that another sequence shares (the next token would overwrite its K/V).
    void truncate(SequenceId seq, uint32_t n_tokens);

    // Sliding windows (the pool of a model's local layers, which attend to the last `window`
    // positions only): a table entry whose block the sequence gave back.
    static constexpr uint32_t kReleased = 0xFFFFFFFFu;
    // Gives back the sequence's blocks that lie wholly before `position` (their table entries become
    // kReleased; full blocks stay in the prefix cache as any freed block does). Nothing before
    // `position` may be read again: truncating below it leaves the sequence unable to continue.
    void release_before(SequenceId seq, uint32_t position);
    // The first position of the first block the sequence still holds (0 unless release_before).
    uint32_t first_held_position(SequenceId seq) const;
    // For an empty sequence: the first `end` tokens of `prompt` (end a multiple of the block size)
    // holding only the blocks of positions from `from` on, each found by its chained hash (held by
    // another sequence or cached); the blocks before are kReleased. False, changing nothing, when one
    // of them is not there. window_cached: whether it would succeed.
    bool adopt_window(SequenceId seq, std::span<const int32_t> prompt, uint32_t end, uint32_t from);
    bool window_cached(std::span<const int32_t> prompt, uint32_t end, uint32_t from) const;

    const std::vector<uint32_t>& block_table(SequenceId seq) const;
    const std::vector<int32_t>& tokens(SequenceId seq) const;
    uint32_t refcount(uint32_t block) const { return blocks_[block].refcount; }
    std::optional<uint64_t> block_hash(uint32_t block) const;
    std::vector<uint32_t> free_queue() const { return {free_queue_.begin(), free_queue_.end()}; }

    // Statistics (without the byte figures, which the engine fills in).
    void fill_stats(KvStats& s) const;
    std::vector<KvBlockInfo> block_map() const;

private:
    struct Block {
        uint32_t refcount = 0;
        bool hashed = false;
        uint64_t hash = 0;
        std::vector<int32_t> tokens;  // tokens of a hashed block, to verify hits (no collisions)
        uint64_t parent = 0;
        std::list<uint32_t>::iterator queue_pos;
        bool in_queue = false;
    };
    struct Sequence {
        std::vector<uint32_t> table;
        std::vector<int32_t> tokens;
        uint32_t hashed_blocks = 0;  // leading full blocks already registered
        std::vector<uint64_t> hashes;
        uint32_t released = 0;  // leading table entries given back (kReleased)
    };

    uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens) const;
    // Cached full blocks matching the start of prompt (never its last token), with their hashes.
    void match_prefix(std::span<const int32_t> prompt, std::vector<uint32_t>& blocks,
                      std::vector<uint64_t>& hashes) const;
    // adopt_window's lookup: the hashes of every full block of prompt[0, end), the cached blocks
    // of those from `from` on; false when one is missing.
    bool find_window(std::span<const int32_t> prompt, uint32_t end, uint32_t from,
                     std::vector<uint32_t>& blocks, std::vector<uint64_t>& hashes) const;
    uint32_t take_block();
    void acquire(uint32_t block);
    void release(uint32_t block);
    void register_full_blocks(Sequence& s);
    Sequence& seq(SequenceId id);
    const Sequence& seq(SequenceId id) const;

    uint32_t block_tokens_;
    uint64_t model_identity_;
    std::vector<Block> blocks_;
    std::list<uint32_t> free_queue_;
    std::unordered_map<uint64_t, uint32_t> cache_;  // hash -> block
    std::map<SequenceId, Sequence> seqs_;
    SequenceId next_id_ = 1;
    uint64_t query_tokens_ = 0, hit_tokens_ = 0, evictions_ = 0;
    uint32_t last_query_ = 0, last_hit_ = 0, peak_used_ = 0;
};

}  // namespace lantern::kv
