// kv::BlockPool (issue 5): the host-side paged KV bookkeeping, tested the way vLLM tests its prefix
// cache (tests/v1/core/test_prefix_caching.py): exact ref counts of shared blocks, the exact LRU
// free-queue order after frees, eviction of the least recently used free block only, new hashes on
// evicted-and-reused blocks, hits verified against the stored token ids, and a seeded random
// operation sequence checked against an independent model of what every KV slot holds.
//
// Every expected block id and queue order below was derived by hand from the documented policy:
// empty blocks at the front of the free queue, cached blocks at the back in the order they were
// released, a sequence's tail blocks released first, allocation from the front.
#include <QTest>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kv/block_pool.h"
#include "lantern/error.h"

using namespace lantern;
using kv::BlockPool;

namespace {

using Ids = std::vector<uint32_t>;
using Tokens = std::vector<int32_t>;

// n consecutive token ids starting at `first`.
Tokens run(int32_t first, int n) {
    Tokens t(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
    return t;
}

Tokens cat(Tokens a, const Tokens& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

Tokens head(const Tokens& t, size_t n) {
    return Tokens(t.begin(), t.begin() + static_cast<ptrdiff_t>(n));
}

KvStats stats(const BlockPool& p) {
    KvStats s;
    p.fill_stats(s);
    return s;
}

std::vector<SequenceId> sorted_owners(const KvBlockInfo& info) {
    auto o = info.owners;
    std::sort(o.begin(), o.end());
    return o;
}

// Runs f, which must throw lantern::Error(ContextFull); returns its message ("" if it did not).
template <class F>
std::string context_full_message(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        if (e.code() == ErrorCode::ContextFull) return e.what();
        return std::string("wrong error code: ") + e.what();
    }
    return {};
}

// An independent model of the pool for the random test: the live sequences' tokens, and what K/V
// each physical slot holds, written as the token prefix (positions 0..p) it was computed from.
// A slot whose step was undone (truncate) holds nothing valid.
struct RandomModel {
    RandomModel(uint32_t blocks, uint32_t block_tokens, uint32_t seed)
        : n_blocks(blocks),
          bt(block_tokens),
          pool(blocks, block_tokens, 5),
          rng(seed),
          slot(blocks * block_tokens) {
        for (int i = 0; i < 3; ++i) {
            Tokens t;
            for (int k = 0; k < 40; ++k) t.push_back(uniform(0, 5) == 0 ? uniform(0, 40) : 100 * i + k);
            bases.push_back(t);
        }
    }

    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
    SequenceId pick() {
        auto it = seqs.begin();
        std::advance(it, uniform(0, static_cast<int>(seqs.size()) - 1));
        return it->first;
    }

    // Appends with an exact prediction of the blocks taken (the front of the free queue, in order)
    // and of the evictions (taken blocks that were cached). Returns false on ContextFull.
    bool append(SequenceId id, const Tokens& toks) {
        const auto q = pool.free_queue();
        const auto old_table = pool.block_table(id);
        const auto before = stats(pool);
        const size_t len = seqs[id].size();
        const size_t need = (len + toks.size() + bt - 1) / bt - old_table.size();
        uint64_t evicted = 0;  // taken blocks that hold a cached (hashed) block now
        for (size_t k = 0; k < need && k < q.size(); ++k)
            evicted += pool.block_hash(q[k]).has_value() ? 1 : 0;
        std::vector<uint32_t> new_slots;
        try {
            new_slots = pool.append(id, toks);
        } catch (const Error& e) {
            if (e.code() != ErrorCode::ContextFull) throw;
            ++context_full;
            if (need <= q.size())
                failure = "ContextFull although enough blocks were free";
            else if (pool.free_queue() != q || pool.block_table(id) != old_table ||
                     stats(pool).cached_blocks != before.cached_blocks || stats(pool).evictions != evictions)
                failure = "a failed append changed the pool";
            return false;
        }
        if (need > q.size()) {
            failure = "append succeeded without enough free blocks";
            return false;
        }
        Ids expect = old_table;
        expect.insert(expect.end(), q.begin(), q.begin() + static_cast<ptrdiff_t>(need));
        if (pool.block_table(id) != expect) failure = "append did not take the front of the free queue";
        evictions += evicted;
        Tokens& mine = seqs[id];
        for (size_t k = 0; k < toks.size(); ++k) {
            mine.push_back(toks[k]);
            size_t p = len + k;
            if (new_slots.size() != toks.size() || new_slots[k] != expect[p / bt] * bt + p % bt) {
                failure = "a slot outside the block table";
                return false;
            }
            slot[new_slots[k]] = mine;
        }
        return true;
    }

    std::string random_operation() {
        int r = uniform(0, 99);
        if (seqs.empty() || (r < 25 && seqs.size() < 6)) {
            // A new prompt: a prefix of a base prompt, sometimes with one token changed.
            Tokens prompt =
                head(bases[static_cast<size_t>(uniform(0, 2))], static_cast<size_t>(uniform(1, 40)));
            if (uniform(0, 3) == 0)
                prompt[static_cast<size_t>(uniform(0, static_cast<int>(prompt.size()) - 1))] = uniform(0, 40);
            auto id = pool.create_sequence();
            seqs[id] = {};
            uint32_t got = pool.reuse_prefix(id, prompt);
            size_t limit = (prompt.size() - 1) / bt * bt;
            if (got % bt != 0 || got > limit || pool.tokens(id) != head(prompt, got))
                failure = "reuse_prefix returned " + std::to_string(got) + " for a prompt of " +
                          std::to_string(prompt.size());
            seqs[id] = head(prompt, got);
            hits += got > 0;
            append(id, Tokens(prompt.begin() + got, prompt.end()));
            return "new prompt of " + std::to_string(prompt.size()) + " tokens, " + std::to_string(got) +
                   " reused";
        }
        if (r < 60) {
            // Grow a sequence (usually along its base prompt); sometimes undo the step.
            SequenceId id = pick();
            int n = r < 55 ? uniform(1, 10) : uniform(10, 40);
            Tokens toks;
            const Tokens& mine = seqs[id];
            const Tokens& base = bases[static_cast<size_t>(uniform(0, 2))];
            for (int k = 0; k < n; ++k) {
                size_t p = mine.size() + static_cast<size_t>(k);
                toks.push_back(p < base.size() && uniform(0, 3) != 0 ? base[p] : uniform(0, 40));
            }
            if (!append(id, toks)) return "append (ContextFull)";
            if (uniform(0, 3) == 0) {
                uint32_t undo = static_cast<uint32_t>(uniform(1, n));
                const Ids table = pool.block_table(id);
                pool.truncate(id, undo);
                Tokens& t = seqs[id];
                for (uint32_t k = 0; k < undo; ++k) {
                    size_t p = t.size() - 1;
                    slot[table[p / bt] * bt + p % bt] = std::nullopt;  // its step never computed it
                    t.pop_back();
                }
                ++rollbacks;
                return "append " + std::to_string(n) + ", undo " + std::to_string(undo);
            }
            return "append " + std::to_string(n);
        }
        if (r < 80 && seqs.size() < 6) {
            SequenceId from = pick();
            uint32_t shared = 12345;
            auto id = pool.fork(from, &shared);
            const Tokens src = seqs[from];
            if (shared != src.size() / bt * bt || pool.tokens(id) != head(src, shared))
                failure = "fork shared " + std::to_string(shared) + " of " + std::to_string(src.size());
            seqs[id] = head(src, shared);
            ++forks;
            // The engine recomputes the partial tail into the fork's own block.
            append(id, Tokens(src.begin() + shared, src.end()));
            return "fork";
        }
        SequenceId id = pick();
        pool.free_sequence(id);
        seqs.erase(id);
        return "free";
    }

    std::string check() {
        std::vector<uint32_t> rc(n_blocks, 0);
        for (auto& [id, toks] : seqs)
            for (uint32_t b : pool.block_table(id)) {
                if (b >= n_blocks) return "block id out of range";
                ++rc[b];
            }
        auto s = stats(pool);
        uint32_t used = 0, cached = 0, empty = 0;
        for (uint32_t b = 0; b < n_blocks; ++b) {
            if (pool.refcount(b) != rc[b]) return "refcount of block " + std::to_string(b);
            if (rc[b] > 0)
                ++used;
            else if (pool.block_hash(b))
                ++cached;
            else
                ++empty;
        }
        if (s.used_blocks != used || s.cached_blocks != cached || s.empty_blocks != empty)
            return "block counts";
        if (s.used_blocks + s.cached_blocks + s.empty_blocks != s.total_blocks || s.total_blocks != n_blocks)
            return "used + cached + empty != total";
        auto q = pool.free_queue();
        if (q.size() != n_blocks - used) return "free queue size";
        std::set<uint32_t> distinct(q.begin(), q.end());
        if (distinct.size() != q.size()) return "a block twice in the free queue";
        bool seen_cached = false;
        for (uint32_t b : q) {
            if (b >= n_blocks || rc[b] != 0) return "an in-use block in the free queue";
            if (pool.block_hash(b))
                seen_cached = true;
            else if (seen_cached)
                return "an empty block behind a cached one in the free queue";
        }
        if (s.sequences.size() != seqs.size()) return "sequence count";
        size_t i = 0;
        for (auto& [id, toks] : seqs) {
            if (pool.tokens(id) != toks) return "tokens of sequence " + std::to_string(id);
            const auto& table = pool.block_table(id);
            if (table.size() != (toks.size() + bt - 1) / bt)
                return "table size of sequence " + std::to_string(id);
            if (s.sequences[i].id != id || s.sequences[i].tokens != toks.size() ||
                s.sequences[i].blocks != table.size())
                return "per-sequence stats";
            ++i;
            for (size_t p = 0; p < toks.size(); ++p) {
                const auto& held = slot[table[p / bt] * bt + p % bt];
                if (!held || *held != head(toks, p + 1))
                    return "sequence " + std::to_string(id) + " reads wrong K/V at position " +
                           std::to_string(p);
            }
        }
        max_used = std::max(max_used, used);
        if (s.peak_used_blocks != max_used) return "peak used blocks";
        if (s.evictions != evictions)
            return "evictions: " + std::to_string(s.evictions) + ", expected " + std::to_string(evictions);
        return {};
    }

    uint32_t n_blocks, bt;
    BlockPool pool;
    std::mt19937 rng;
    std::vector<Tokens> bases;
    std::vector<std::optional<Tokens>> slot;
    std::map<SequenceId, Tokens> seqs;
    std::string failure;
    uint32_t max_used = 0;
    uint64_t evictions = 0;
    int hits = 0, context_full = 0, rollbacks = 0, forks = 0;
};

}  // namespace

class BlockPoolTest : public QObject {
    Q_OBJECT
private slots:
    // A sliding window's pool: blocks wholly before a position go back (cached, as freed full
    // blocks are), the table marks them, truncate and free skip them, and adopt_window finds a
    // window's blocks by their hashes whether another sequence holds them or they are cached.
    void windows_give_back_and_adopt_blocks() {
        BlockPool pool(8, 4, 99);
        Tokens toks(18);
        for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>(i + 1);
        const SequenceId a = pool.create_sequence();
        pool.append(a, toks);  // blocks for positions 0-3, 4-7, 8-11, 12-15, 16-17
        QCOMPARE(pool.free_blocks(), 3u);
        pool.release_before(a, 9);  // 0-3 and 4-7 lie wholly before position 9
        QCOMPARE(pool.first_held_position(a), 8u);
        QCOMPARE(pool.block_table(a)[0], BlockPool::kReleased);
        QCOMPARE(pool.block_table(a)[1], BlockPool::kReleased);
        QCOMPARE(pool.free_blocks(), 5u);
        KvStats st;
        pool.fill_stats(st);
        QCOMPARE(st.sequences[0].blocks, 3u);
        QCOMPARE(st.cached_blocks, 2u);
        pool.release_before(a, 100);  // never the partial block, nor past what is full
        QCOMPARE(pool.first_held_position(a), 16u);
        QCOMPARE(pool.free_blocks(), 7u);

        // The window before position 16 from position 9: blocks 8-11 and 12-15, cached now.
        const SequenceId b = pool.create_sequence();
        QVERIFY(pool.window_cached(toks, 16, 9));
        QVERIFY(pool.adopt_window(b, toks, 16, 9));
        QCOMPARE(pool.tokens(b).size(), size_t(16));
        QCOMPARE(pool.first_held_position(b), 8u);
        QCOMPARE(pool.block_table(b)[0], BlockPool::kReleased);
        QCOMPARE(pool.refcount(pool.block_table(b)[2]), 1u);
        // From position 0: every block, each found in the cache.
        const SequenceId c = pool.create_sequence();
        QVERIFY(pool.adopt_window(c, toks, 16, 0));
        QCOMPARE(pool.first_held_position(c), 0u);
        QCOMPARE(pool.refcount(pool.block_table(c)[2]), 2u);  // shared with b
        // Other tokens: no block of theirs is cached, nothing changes.
        Tokens other = toks;
        other[1] = 99;
        const SequenceId d = pool.create_sequence();
        QVERIFY(!pool.window_cached(other, 16, 8));  // 8-15's chain passes through the changed block
        QVERIFY(!pool.adopt_window(d, other, 16, 0));
        QVERIFY(pool.tokens(d).empty() && pool.block_table(d).empty());
        QVERIFY(!pool.adopt_window(c, toks, 16, 0));  // only an empty sequence adopts

        // Truncating and freeing skip the entries given back; every block returns.
        pool.truncate(a, 18);
        QVERIFY(pool.tokens(a).empty() && pool.block_table(a).empty());
        pool.truncate(b, 8);  // its held blocks go (one still c's)
        QCOMPARE(pool.block_table(b), (Ids{BlockPool::kReleased, BlockPool::kReleased}));
        pool.truncate(b, 6);  // into a given-back block: the table shrinks past it
        QCOMPARE(pool.tokens(b).size(), size_t(2));
        QCOMPARE(pool.block_table(b), (Ids{BlockPool::kReleased}));
        for (SequenceId id : {a, b, c, d}) pool.free_sequence(id);
        QCOMPARE(pool.free_blocks(), 8u);
    }

    void fresh_pool_is_all_empty() {
        BlockPool pool(5, 16, 1);
        QCOMPARE(pool.free_queue(), (Ids{0, 1, 2, 3, 4}));
        auto s = stats(pool);
        QCOMPARE(s.total_blocks, 5u);
        QCOMPARE(s.block_tokens, 16u);
        QCOMPARE(s.capacity_tokens, uint64_t(80));
        QCOMPARE(s.used_blocks, 0u);
        QCOMPARE(s.cached_blocks, 0u);
        QCOMPARE(s.empty_blocks, 5u);
        QVERIFY_THROWS_EXCEPTION(Error, BlockPool(0, 16, 1));
        QVERIFY_THROWS_EXCEPTION(Error, BlockPool(4, 0, 1));
    }

    void slots_follow_the_block_table() {
        BlockPool pool(4, 4, 1);
        auto a = pool.create_sequence();
        // Blocks 0 and 1 hold slots 0..7; token k of the sequence lands in slot 4*table[k/4] + k%4.
        QCOMPARE(pool.append(a, run(10, 3)), (Ids{0, 1, 2}));
        QCOMPARE(pool.append(a, run(13, 3)), (Ids{3, 4, 5}));
        QCOMPARE(pool.block_table(a), (Ids{0, 1}));
        QCOMPARE(pool.tokens(a), run(10, 6));
        QCOMPARE(pool.blocks_needed(a, 2), 0u);
        QCOMPARE(pool.blocks_needed(a, 3), 1u);
        QCOMPARE(pool.blocks_needed(a, 6), 1u);
        QCOMPARE(pool.blocks_needed(a, 7), 2u);
    }

    void refcounts_after_reuse_prefix_and_fork() {
        BlockPool pool(10, 4, 42);
        const Tokens ta = run(100, 10);  // 2 full blocks + 2 tokens
        auto a = pool.create_sequence();
        pool.append(a, ta);
        QCOMPARE(pool.block_table(a), (Ids{0, 1, 2}));
        QCOMPARE(pool.refcount(0), 1u);
        QCOMPARE(pool.refcount(1), 1u);
        QCOMPARE(pool.refcount(2), 1u);
        QVERIFY(pool.block_hash(0).has_value());
        QVERIFY(pool.block_hash(1).has_value());
        QVERIFY(!pool.block_hash(2).has_value());  // partial: not in the prefix cache

        // b's prompt = a's 10 tokens + 1: the two full blocks are shared, the partial one is not.
        auto b = pool.create_sequence();
        const Tokens pb = cat(ta, {500});
        QCOMPARE(pool.reuse_prefix(b, pb), 8u);
        QCOMPARE(pool.block_table(b), (Ids{0, 1}));
        QCOMPARE(pool.refcount(0), 2u);
        QCOMPARE(pool.refcount(1), 2u);
        QCOMPARE(pool.refcount(2), 1u);
        pool.append(b, Tokens(pb.begin() + 8, pb.end()));
        QCOMPARE(pool.block_table(b), (Ids{0, 1, 3}));
        QCOMPARE(pool.refcount(3), 1u);

        uint32_t shared = 0;
        auto c = pool.fork(a, &shared);
        QCOMPARE(shared, 8u);
        QCOMPARE(pool.block_table(c), (Ids{0, 1}));
        QCOMPARE(pool.tokens(c), head(ta, 8));
        QCOMPARE(pool.refcount(0), 3u);
        QCOMPARE(pool.refcount(1), 3u);
        QCOMPARE(pool.refcount(2), 1u);

        auto d = pool.fork(b, &shared);
        QCOMPARE(shared, 8u);
        QCOMPARE(pool.refcount(0), 4u);
        QCOMPARE(pool.refcount(1), 4u);
        QCOMPARE(pool.refcount(3), 1u);  // b's partial block stays b's alone

        auto map = pool.block_map();
        QCOMPARE(sorted_owners(map[0]), (std::vector<SequenceId>{a, b, c, d}));
        QCOMPARE(sorted_owners(map[1]), (std::vector<SequenceId>{a, b, c, d}));
        QCOMPARE(sorted_owners(map[2]), (std::vector<SequenceId>{a}));
        QCOMPARE(sorted_owners(map[3]), (std::vector<SequenceId>{b}));
        auto s = stats(pool);
        QCOMPARE(s.used_blocks, 4u);  // 4 distinct blocks, however many owners
        QCOMPARE(s.empty_blocks, 6u);

        pool.free_sequence(a);
        QCOMPARE(pool.refcount(0), 3u);
        QCOMPARE(pool.refcount(1), 3u);
        QCOMPARE(pool.refcount(2), 0u);
        QCOMPARE(pool.free_queue().front(), 2u);  // partial block: empty again, handed out first
        pool.free_sequence(c);
        pool.free_sequence(d);
        QCOMPARE(pool.refcount(0), 1u);
        QCOMPARE(pool.refcount(1), 1u);
        pool.free_sequence(b);
        QCOMPARE(pool.refcount(0), 0u);
        QCOMPARE(pool.refcount(1), 0u);
        QCOMPARE(pool.refcount(3), 0u);
        s = stats(pool);
        QCOMPARE(s.used_blocks, 0u);
        QCOMPARE(s.cached_blocks, 2u);
        QCOMPARE(s.empty_blocks, 8u);
        QVERIFY_THROWS_EXCEPTION(Error, pool.free_sequence(b));
    }

    void fork_of_exact_full_blocks_shares_all_of_them() {
        BlockPool pool(6, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(7, 8));
        uint32_t shared = 0;
        auto b = pool.fork(a, &shared);
        QCOMPARE(shared, 8u);
        QCOMPARE(pool.block_table(b), (Ids{0, 1}));
        QCOMPARE(pool.refcount(0), 2u);
        QCOMPARE(pool.refcount(1), 2u);
        // Both continue differently: each gets its own new block, the shared ones are untouched.
        QCOMPARE(pool.append(a, Tokens{1}), (Ids{8}));
        QCOMPARE(pool.append(b, Tokens{2}), (Ids{12}));
        QCOMPARE(pool.block_table(a), (Ids{0, 1, 2}));
        QCOMPARE(pool.block_table(b), (Ids{0, 1, 3}));
        QCOMPARE(pool.refcount(0), 2u);
        QCOMPARE(pool.refcount(2), 1u);
        QCOMPARE(pool.refcount(3), 1u);
        // A fork of a sequence shorter than one block shares nothing.
        auto e = pool.create_sequence();
        pool.append(e, run(50, 3));
        auto f = pool.fork(e, &shared);
        QCOMPARE(shared, 0u);
        QVERIFY(pool.block_table(f).empty());
        QVERIFY(pool.tokens(f).empty());
    }

    void free_queue_order_after_frees() {
        BlockPool pool(8, 4, 1);
        QCOMPARE(pool.free_queue(), (Ids{0, 1, 2, 3, 4, 5, 6, 7}));
        auto a = pool.create_sequence();
        pool.append(a, run(0, 14));  // blocks 0,1,2 full, 3 partial
        auto b = pool.create_sequence();
        pool.append(b, run(100, 5));  // block 4 full, 5 partial
        QCOMPARE(pool.block_table(a), (Ids{0, 1, 2, 3}));
        QCOMPARE(pool.block_table(b), (Ids{4, 5}));
        QCOMPARE(pool.free_queue(), (Ids{6, 7}));

        // a releases its tail first: 3 (empty) goes to the front, then 2, 1, 0 join the back.
        pool.free_sequence(a);
        QCOMPARE(pool.free_queue(), (Ids{3, 6, 7, 2, 1, 0}));
        pool.free_sequence(b);
        QCOMPARE(pool.free_queue(), (Ids{5, 3, 6, 7, 2, 1, 0, 4}));
        auto s = stats(pool);
        QCOMPARE(s.used_blocks, 0u);
        QCOMPARE(s.cached_blocks, 4u);
        QCOMPARE(s.empty_blocks, 4u);

        // Empty blocks are handed out before any cached block is evicted...
        const auto hash2 = pool.block_hash(2);
        QVERIFY(hash2.has_value());
        auto c = pool.create_sequence();
        pool.append(c, run(1000, 16));
        QCOMPARE(pool.block_table(c), (Ids{5, 3, 6, 7}));
        QCOMPARE(stats(pool).evictions, uint64_t(0));
        QCOMPARE(pool.free_queue(), (Ids{2, 1, 0, 4}));
        // ...then the least recently used one: a's deepest full block.
        pool.append(c, run(1016, 4));
        QCOMPARE(pool.block_table(c), (Ids{5, 3, 6, 7, 2}));
        QCOMPARE(stats(pool).evictions, uint64_t(1));
        QCOMPARE(pool.free_queue(), (Ids{1, 0, 4}));
        QVERIFY(pool.block_hash(2).has_value());
        QVERIFY(*pool.block_hash(2) != *hash2);  // now c's fifth block

        // a's prompt again: its first two blocks are still cached, the third was evicted.
        auto d = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(d, run(0, 14)), 8u);
        QCOMPARE(pool.block_table(d), (Ids{0, 1}));
        QCOMPARE(pool.free_queue(), (Ids{4}));
    }

    void a_hit_makes_a_cached_block_recently_used() {
        BlockPool pool(6, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 8));  // 0, 1
        auto b = pool.create_sequence();
        pool.append(b, run(100, 8));  // 2, 3
        pool.free_sequence(a);
        pool.free_sequence(b);
        QCOMPARE(pool.free_queue(), (Ids{4, 5, 1, 0, 3, 2}));
        auto c = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(c, run(0, 9)), 8u);
        QCOMPARE(pool.free_queue(), (Ids{4, 5, 3, 2}));
        pool.append(c, Tokens{8});
        QCOMPARE(pool.block_table(c), (Ids{0, 1, 4}));
        pool.free_sequence(c);
        // a's blocks were used last, so b's are now the least recently used.
        QCOMPARE(pool.free_queue(), (Ids{4, 5, 3, 2, 1, 0}));
        auto d = pool.create_sequence();
        pool.append(d, run(500, 16));
        QCOMPARE(pool.block_table(d), (Ids{4, 5, 3, 2}));
        QCOMPARE(stats(pool).evictions, uint64_t(2));
        QVERIFY(pool.block_hash(0).has_value());
        QVERIFY(pool.block_hash(1).has_value());
        auto e = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(e, run(0, 9)), 8u);
        auto f = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(f, run(100, 9)), 0u);  // b's blocks were evicted
    }

    void in_use_blocks_are_never_evicted() {
        BlockPool pool(4, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 8));  // 0, 1: full, hashed, in use
        const auto h0 = pool.block_hash(0), h1 = pool.block_hash(1);
        auto b = pool.create_sequence();
        pool.append(b, run(100, 4));  // 2
        pool.free_sequence(b);
        QCOMPARE(pool.free_queue(), (Ids{3, 2}));
        // c needs two blocks: the empty 3, then the cached 2 is evicted, never a's 0 or 1.
        auto c = pool.create_sequence();
        pool.append(c, run(200, 8));
        QCOMPARE(pool.block_table(c), (Ids{3, 2}));
        QCOMPARE(stats(pool).evictions, uint64_t(1));
        QCOMPARE(pool.refcount(0), 1u);
        QCOMPARE(pool.refcount(1), 1u);
        QCOMPARE(pool.block_hash(0), h0);
        QCOMPARE(pool.block_hash(1), h1);
        QVERIFY(pool.free_queue().empty());
        // Nothing free: a new block cannot be had, although blocks 0 and 1 are in the cache.
        auto d = pool.create_sequence();
        QVERIFY(!context_full_message([&] { pool.append(d, Tokens{1}); }).empty());
        QCOMPARE(pool.refcount(0), 1u);
        QCOMPARE(stats(pool).evictions, uint64_t(1));
        // a's blocks, in use, are shared (not evicted) by a prompt that starts with a's tokens.
        QCOMPARE(pool.reuse_prefix(d, run(0, 9)), 8u);
        QCOMPARE(pool.refcount(0), 2u);
        QCOMPARE(pool.refcount(1), 2u);
    }

    void a_block_reused_after_eviction_carries_the_new_hash() {
        BlockPool pool(2, 4, 9);
        auto a = pool.create_sequence();
        const Tokens x = run(0, 4), y = run(300, 8);
        pool.append(a, x);
        const auto hx = pool.block_hash(0);
        QVERIFY(hx.has_value());
        pool.free_sequence(a);
        QCOMPARE(pool.free_queue(), (Ids{1, 0}));
        auto b = pool.create_sequence();
        pool.append(b, y);  // takes 1, then evicts 0 for its second block
        QCOMPARE(pool.block_table(b), (Ids{1, 0}));
        QCOMPARE(stats(pool).evictions, uint64_t(1));
        QVERIFY(pool.block_hash(0).has_value());
        QVERIFY(*pool.block_hash(0) != *hx);
        QVERIFY(*pool.block_hash(0) != *pool.block_hash(1));
        pool.free_sequence(b);
        // The old hash no longer hits; the new one does, with block 0 in second place.
        auto c = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(c, cat(x, {1})), 0u);
        QVERIFY(pool.block_table(c).empty());
        auto d = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(d, cat(y, {1})), 8u);
        QCOMPARE(pool.block_table(d), (Ids{1, 0}));
    }

    void the_hash_chains_and_includes_the_model_identity() {
        const Tokens first = run(0, 4), second = run(40, 4);
        auto hashes_of = [](uint64_t identity, const Tokens& t) {
            BlockPool pool(4, 4, identity);
            auto s = pool.create_sequence();
            pool.append(s, t);
            std::vector<uint64_t> h;
            for (uint32_t b : pool.block_table(s)) h.push_back(*pool.block_hash(b));
            return h;
        };
        auto h = hashes_of(7, cat(first, second));
        QCOMPARE(h.size(), size_t(2));
        QCOMPARE(hashes_of(7, cat(first, second)), h);         // deterministic
        QVERIFY(hashes_of(8, cat(first, second))[0] != h[0]);  // other model, other hash
        QVERIFY(hashes_of(8, cat(first, second))[1] != h[1]);
        auto other_parent = hashes_of(7, cat(run(1, 4), second));  // same second block, other first
        QVERIFY(other_parent[1] != h[1]);
        QVERIFY(hashes_of(7, cat(second, first))[0] != h[0]);
    }

    void hits_are_verified_against_the_stored_tokens() {
        BlockPool pool(8, 4, 1);
        const Tokens x = run(10, 12);  // three full blocks
        auto a = pool.create_sequence();
        pool.append(a, x);
        pool.free_sequence(a);
        auto hit = [&](Tokens prompt) {
            auto s = pool.create_sequence();
            uint32_t n = pool.reuse_prefix(s, cat(std::move(prompt), {999}));
            const bool consistent = pool.tokens(s).size() == n && pool.block_table(s).size() == n / 4;
            pool.free_sequence(s);
            return consistent ? n : 1000000u;
        };
        auto changed = [&](size_t at) {
            Tokens t = x;
            t[at] = 400;
            return t;
        };
        QCOMPARE(hit(x), 12u);
        QCOMPARE(hit(changed(2)), 0u);  // one token of the first block differs
        QCOMPARE(hit(changed(0)), 0u);  // ...and the identical blocks 2 and 3 are not reused
        QCOMPARE(hit(changed(3)), 0u);
        QCOMPARE(hit(changed(5)), 4u);   // second block differs: only the first is reused
        QCOMPARE(hit(changed(11)), 8u);  // last token of the third block differs
        // The later blocks alone (the first block missing) never match: hashes chain from the start.
        QCOMPARE(hit(Tokens(x.begin() + 4, x.end())), 0u);
        auto s = stats(pool);
        QCOMPARE(s.prefix_query_tokens, uint64_t(6 * 13 + 9));
        QCOMPARE(s.prefix_hit_tokens, uint64_t(12 + 4 + 8));
        QCOMPARE(s.last_query_tokens, 9u);
        QCOMPARE(s.last_hit_tokens, 0u);
    }

    void a_hit_leaves_the_last_prompt_token_to_compute() {
        BlockPool pool(8, 4, 1);
        const Tokens x = run(10, 12);
        auto a = pool.create_sequence();
        pool.append(a, x);
        auto reuse = [&](const Tokens& prompt) {
            auto s = pool.create_sequence();
            return pool.reuse_prefix(s, prompt);
        };
        QCOMPARE(reuse(x), 8u);             // exactly 3 full blocks: reuse 2
        QCOMPARE(reuse(cat(x, {1})), 12u);  // one more token: all 3
        QCOMPARE(reuse(head(x, 4)), 0u);    // exactly 1 full block: reuse 0
        QCOMPARE(reuse(head(x, 5)), 4u);
        QCOMPARE(reuse(head(x, 8)), 4u);
        QCOMPARE(reuse(head(x, 1)), 0u);
        QCOMPARE(reuse(Tokens{}), 0u);
        // A sequence that already holds tokens reuses nothing.
        QCOMPARE(pool.reuse_prefix(a, cat(x, {1})), 0u);
        QCOMPARE(pool.tokens(a), x);
        auto s = stats(pool);
        QCOMPARE(s.last_query_tokens, 13u);
        QCOMPARE(s.last_hit_tokens, 0u);
        QCOMPARE(s.prefix_hit_tokens, uint64_t(8 + 12 + 4 + 4));
    }

    void only_full_blocks_are_shared() {
        BlockPool pool(8, 4, 1);
        const Tokens x = run(10, 10);  // 2 full blocks + 2 tokens
        auto a = pool.create_sequence();
        pool.append(a, x);
        auto map = pool.block_map();
        QVERIFY(map[0].full_hashed && map[1].full_hashed);
        QVERIFY(!map[2].full_hashed);
        QCOMPARE(map[2].filled, 2u);
        pool.free_sequence(a);
        auto s = stats(pool);
        QCOMPARE(s.cached_blocks, 2u);
        QCOMPARE(s.empty_blocks, 6u);
        auto b = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(b, cat(x, run(50, 5))), 8u);
        QCOMPARE(pool.block_table(b), (Ids{0, 1}));
    }

    void context_full_changes_nothing() {
        BlockPool pool(4, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 10));  // 0, 1, 2
        auto b = pool.create_sequence();
        const auto queue = pool.free_queue();
        const auto before = stats(pool);
        auto msg = context_full_message([&] { pool.append(b, run(100, 8)); });  // needs 2, 1 free
        QVERIFY2(msg.find("full") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("2 more blocks needed, 1 free") != std::string::npos, msg.c_str());
        QVERIFY(pool.tokens(b).empty());
        QVERIFY(pool.block_table(b).empty());
        QCOMPARE(pool.free_queue(), queue);
        QCOMPARE(stats(pool).used_blocks, before.used_blocks);
        QCOMPARE(stats(pool).peak_used_blocks, before.peak_used_blocks);

        pool.append(a, Tokens{10, 11});  // fills block 2: no new block needed
        QCOMPARE(pool.block_table(a), (Ids{0, 1, 2}));
        QVERIFY(!context_full_message([&] { pool.append(a, run(12, 5)); }).empty());  // 2 needed
        QCOMPARE(pool.tokens(a), run(0, 12));
        QCOMPARE(pool.block_table(a), (Ids{0, 1, 2}));
        pool.append(a, run(12, 4));
        QCOMPARE(pool.block_table(a), (Ids{0, 1, 2, 3}));
        QVERIFY(!context_full_message([&] { pool.append(a, Tokens{16}); }).empty());
        QVERIFY(!context_full_message([&] { pool.append(b, Tokens{16}); }).empty());
        QCOMPARE(pool.tokens(a).size(), size_t(16));
        QCOMPARE(stats(pool).peak_used_blocks, 4u);

        // Cached blocks count as free, but a request that cannot be met evicts none of them.
        pool.free_sequence(a);
        QCOMPARE(stats(pool).cached_blocks, 4u);
        std::vector<std::optional<uint64_t>> hashes;
        for (uint32_t blk = 0; blk < 4; ++blk) hashes.push_back(pool.block_hash(blk));
        QVERIFY(!context_full_message([&] { pool.append(b, run(300, 17)); }).empty());
        QCOMPARE(stats(pool).cached_blocks, 4u);
        QCOMPARE(stats(pool).evictions, uint64_t(0));
        for (uint32_t blk = 0; blk < 4; ++blk) QCOMPARE(pool.block_hash(blk), hashes[blk]);
        QCOMPARE(pool.append(b, run(300, 16)).size(), size_t(16));  // exactly the pool: evicts all 4
        QCOMPARE(stats(pool).evictions, uint64_t(4));
    }

    void block_map_reports_owners_fill_and_positions() {
        BlockPool pool(6, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 6));  // 0 full, 1 holds 2
        uint32_t shared = 0;
        auto b = pool.fork(a, &shared);
        QCOMPARE(shared, 4u);
        pool.append(b, run(50, 3));  // b: 0 shared, 2 holds 3 tokens at positions 4..6
        auto map = pool.block_map();
        QCOMPARE(map.size(), size_t(6));
        for (uint32_t i = 0; i < 6; ++i) QCOMPARE(map[i].block, i);
        QCOMPARE(sorted_owners(map[0]), (std::vector<SequenceId>{a, b}));
        QCOMPARE(map[0].filled, 4u);
        QCOMPARE(map[0].first_position, 0);
        QVERIFY(map[0].full_hashed);
        QVERIFY(!map[0].cached);
        QCOMPARE(sorted_owners(map[1]), (std::vector<SequenceId>{a}));
        QCOMPARE(map[1].filled, 2u);
        QCOMPARE(map[1].first_position, 4);
        QVERIFY(!map[1].full_hashed);
        QCOMPARE(sorted_owners(map[2]), (std::vector<SequenceId>{b}));
        QCOMPARE(map[2].filled, 3u);
        QCOMPARE(map[2].first_position, 4);
        for (uint32_t i = 3; i < 6; ++i) {
            QVERIFY(map[i].owners.empty());
            QCOMPARE(map[i].filled, 0u);
            QCOMPARE(map[i].first_position, -1);
            QVERIFY(!map[i].cached && !map[i].full_hashed);
        }
        auto s = stats(pool);
        QCOMPARE(s.sequences.size(), size_t(2));
        QCOMPARE(s.sequences[0].id, a);
        QCOMPARE(s.sequences[0].tokens, 6u);
        QCOMPARE(s.sequences[0].blocks, 2u);
        QCOMPARE(s.sequences[1].id, b);
        QCOMPARE(s.sequences[1].tokens, 7u);
        QCOMPARE(s.sequences[1].blocks, 2u);

        pool.free_sequence(a);
        pool.free_sequence(b);
        map = pool.block_map();
        QVERIFY(map[0].owners.empty());
        QVERIFY(map[0].cached);
        QVERIFY(map[0].full_hashed);
        QCOMPARE(map[0].filled, 4u);
        QCOMPARE(map[0].first_position, -1);
        QVERIFY(!map[1].cached);
        QCOMPARE(map[1].filled, 0u);
        QCOMPARE(map[2].filled, 0u);
        QVERIFY(stats(pool).sequences.empty());
    }

    void truncate_releases_emptied_blocks() {
        BlockPool pool(6, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 10));  // 0, 1 full; 2 holds 2
        pool.truncate(a, 3);         // 7 tokens: block 2 emptied, block 1 cut to 3
        QCOMPARE(pool.tokens(a), run(0, 7));
        QCOMPARE(pool.block_table(a), (Ids{0, 1}));
        QCOMPARE(pool.refcount(2), 0u);
        QCOMPARE(pool.free_queue(), (Ids{2, 3, 4, 5}));
        auto s = stats(pool);
        QCOMPARE(s.used_blocks, 2u);
        QCOMPARE(s.empty_blocks, 4u);
        QCOMPARE(s.sequences[0].tokens, 7u);
        QCOMPARE(s.sequences[0].blocks, 2u);
        QCOMPARE(pool.blocks_needed(a, 1), 0u);
        QCOMPARE(pool.blocks_needed(a, 2), 1u);
        // Block 1 no longer holds tokens 4..7: it must not stay in the prefix cache, and when it is
        // completed with a different token it stands for the new tokens only.
        QVERIFY(!pool.block_hash(1).has_value());
        QVERIFY(!pool.block_map()[1].full_hashed);
        QCOMPARE(pool.block_map()[1].filled, 3u);
        pool.append(a, Tokens{77});
        QCOMPARE(pool.block_table(a), (Ids{0, 1}));
        QVERIFY(pool.block_hash(1).has_value());
        auto b = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(b, run(0, 9)), 4u);  // the old tokens 4..7: only block 0 hits
        auto c = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(c, cat(run(0, 7), {77, 1})), 8u);
        QCOMPARE(pool.block_table(c), (Ids{0, 1}));
        // Truncating more than the sequence holds empties it.
        pool.truncate(a, 100);
        QVERIFY(pool.tokens(a).empty());
        QVERIFY(pool.block_table(a).empty());
        QCOMPARE(pool.refcount(0), 2u);  // b and c still hold block 0
    }

    void truncate_of_whole_blocks_drops_them_from_the_prefix_cache() {
        // truncate() undoes an append whose tokens were never computed (a failed step): blocks
        // that lose tokens must not be offered as cached K/V afterwards.
        BlockPool pool(4, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 4));
        pool.append(a, run(4, 8));  // blocks 1, 2 filled by this append
        pool.truncate(a, 8);
        QCOMPARE(pool.block_table(a), (Ids{0}));
        QVERIFY(pool.block_hash(0).has_value());
        QVERIFY(!pool.block_hash(1).has_value());
        QVERIFY(!pool.block_hash(2).has_value());
        auto s = stats(pool);
        QCOMPARE(s.cached_blocks, 0u);
        QCOMPARE(s.empty_blocks, 3u);
        auto b = pool.create_sequence();
        QCOMPARE(pool.reuse_prefix(b, run(0, 13)), 4u);
    }

    void truncate_refuses_to_cut_into_a_shared_block() {
        BlockPool pool(4, 4, 1);
        auto a = pool.create_sequence();
        pool.append(a, run(0, 8));
        uint32_t shared = 0;
        auto b = pool.fork(a, &shared);
        QCOMPARE(shared, 8u);
        // Cutting a to 6 tokens would make it write its next token into block 1, which b reads.
        QVERIFY_THROWS_EXCEPTION(Error, pool.truncate(a, 2));
        QCOMPARE(pool.tokens(a), run(0, 8));
        QCOMPARE(pool.refcount(1), 2u);
        QVERIFY(pool.block_hash(1).has_value());
        // Dropping whole shared blocks is fine: b keeps them, still cached.
        pool.truncate(a, 4);
        QCOMPARE(pool.block_table(a), (Ids{0}));
        QCOMPARE(pool.refcount(1), 1u);
        QVERIFY(pool.block_hash(1).has_value());
        QCOMPARE(pool.block_table(b), (Ids{0, 1}));
    }

    // A seeded random mix of every operation, checked after each one against an independent model
    // (see RandomModel above). Truncation is used as the engine uses it: to undo an append.
    void random_operations_keep_every_invariant() {
        RandomModel m(12, 4, 20240605u);
        for (int op = 0; op < 4000; ++op) {
            std::string what = m.random_operation();
            std::string err = m.check();
            if (err.empty()) err = m.failure;
            QVERIFY2(err.empty(), qPrintable(QString("operation %1 (%2): %3")
                                                 .arg(op)
                                                 .arg(QString::fromStdString(what))
                                                 .arg(QString::fromStdString(err))));
        }
        qInfo(
            "random operations: %d prefix hits, %d evictions, %d ContextFull, %d rollbacks, %d forks, "
            "peak %u of 12 blocks",
            m.hits, int(m.evictions), m.context_full, m.rollbacks, m.forks, m.max_used);
        // The sequence must have exercised every path, or the checks above prove little.
        QVERIFY(m.hits >= 100);
        QVERIFY(m.evictions >= 100);
        QVERIFY(m.context_full >= 50);
        QVERIFY(m.rollbacks >= 100);
        QVERIFY(m.forks >= 100);
        QCOMPARE(m.max_used, 12u);
    }
};

QTEST_APPLESS_MAIN(BlockPoolTest)
#include "test_block_pool.moc"
