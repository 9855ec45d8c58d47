#include "lantern/scheduler.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include "lantern/error.h"

namespace lantern {

struct Scheduler::Impl {
    struct Generation {
        RequestId id;
        GenerationRequest req;
        SequenceId seq = 0;
        bool started = false;   // holds a sequence
        bool admitted = false;  // on_admitted was called (at the first admission only)
        // What the sequence must hold before the next token is sampled: the prompt, and after a
        // preemption the tokens generated before it as well (the last one, sampled but not yet
        // fed, included: feeding it with the rest is what its decode step would have done).
        std::vector<int32_t> feed;
        size_t prefilled = 0;          // tokens of `feed` in the sequence
        size_t chunk = 0;              // tokens of `feed` this step feeds
        std::vector<int32_t> history;  // prompt + generated (penalty window)
        int32_t next_token = -1;       // sampled, not yet fed
        uint32_t generated = 0;
        std::unique_ptr<Sampler> sampler;
        bool cancelled = false;
    };

    Engine& engine;
    uint32_t budget, max_running, max_blocks, block_tokens, total_blocks;
    RequestId next_id = 1;
    std::map<RequestId, Generation> gens;
    std::deque<RequestId> order;  // admission order (FIFO); the started generations are its front
    uint64_t preemptions = 0;

    Impl(Engine& e, uint32_t b, uint32_t m, uint32_t kv)
        : engine(e),
          budget(std::max<uint32_t>(1, b)),
          max_running(std::max<uint32_t>(1, m)),
          max_blocks(kv),
          block_tokens(std::max<uint32_t>(1, e.kv_stats().block_tokens)),
          total_blocks(e.kv_stats().total_blocks) {}

    uint32_t blocks_for(size_t tokens) const {
        return static_cast<uint32_t>((tokens + block_tokens - 1) / block_tokens);
    }
    size_t length(const Generation& g) const { return g.started ? engine.sequence_length(g.seq) : 0; }
    // Blocks that appending n tokens to g's sequence takes (its table holds blocks_for(length)).
    uint32_t growth(const Generation& g, size_t n) const {
        return blocks_for(length(g) + n) - blocks_for(length(g));
    }

    // Blocks the generations may hold at most: the cache, or their share of it.
    uint32_t capacity() const { return max_blocks ? std::min(max_blocks, total_blocks) : total_blocks; }
    // Blocks the generations may still take: the engine's free ones (empty, or cached and so
    // evictable) but `keep` (what a step's outside item takes), within max_blocks of what they hold.
    uint32_t room(uint32_t keep = 0) const {
        const uint64_t all = engine.kv_free_blocks();
        uint64_t free = all > keep ? all - keep : 0;
        if (max_blocks) {
            uint64_t held = 0;
            for (const auto& [id, g] : gens) held += blocks_for(length(g));
            free = std::min<uint64_t>(free, max_blocks > held ? max_blocks - held : 0);
        }
        return static_cast<uint32_t>(free);
    }

    Generation* last_started() {
        for (auto it = order.rbegin(); it != order.rend(); ++it)
            if (gens.at(*it).started) return &gens.at(*it);
        return nullptr;
    }
    uint32_t started_count() const {
        uint32_t n = 0;
        for (const auto& [id, g] : gens) n += g.started ? 1 : 0;
        return n;
    }

    void finish(Generation& g, StopReason reason) {
        if (g.started) engine.free_sequence(g.seq);
        if (g.req.on_finish) g.req.on_finish(g.id, reason);
        order.erase(std::find(order.begin(), order.end(), g.id));
        gens.erase(g.id);
    }

    // Gives g's blocks back: its full ones stay in the prefix cache (most recently used, so evicted
    // last) and come back at its next admission; only its last partial block is recomputed then.
    void preempt(Generation& g) {
        if (g.next_token >= 0) {  // the history, its last token not yet fed
            g.feed = g.history;
            g.next_token = -1;
        }
        engine.free_sequence(g.seq);
        g.started = false;
        g.prefilled = 0;
        ++preemptions;
        if (g.req.on_preempted) g.req.on_preempted(g.id);
    }

    // Where g can no longer go on: preempted if others hold blocks that may free up, else ended.
    void make_room_without(Generation& g) {
        if (started_count() > 1)
            preempt(g);
        else
            finish(g, StopReason::ContextFull);
    }

    // Samples from `logits`; returns false when the generation ended.
    std::vector<float> constrained;  // scratch: logits with a request's constraint applied

    bool accept(Generation& g, const std::vector<float>& logits) {
        const std::vector<float>* use = &logits;
        if (g.req.constrain_logits) {
            constrained = logits;
            g.req.constrain_logits(g.id, constrained);
            use = &constrained;
        }
        Sample s = g.sampler->sample(*use, g.req.settings, g.history);
        if (std::find(g.req.stop_tokens.begin(), g.req.stop_tokens.end(), s.token) !=
            g.req.stop_tokens.end()) {
            finish(g, StopReason::EndOfText);
            return false;
        }
        g.history.push_back(s.token);
        ++g.generated;
        if (g.req.on_sample) g.req.on_sample(g.id, s);
        if (g.req.on_token) g.req.on_token(g.id, s.token);
        if (g.req.settings.max_new_tokens > 0 &&
            g.generated >= static_cast<uint32_t>(g.req.settings.max_new_tokens)) {
            finish(g, StopReason::MaxTokens);
            return false;
        }
        if (engine.sequence_length(g.seq) + 1 > engine.context_length()) {
            finish(g, StopReason::ContextFull);
            return false;
        }
        g.next_token = s.token;
        return true;
    }

    // One step (Scheduler::step), with `outside` (Scheduler::step_with) last in its batch.
    bool run_step(const StepItem* outside, std::vector<float>* outside_logits, uint32_t max_tokens,
                  SchedulerStepStats* stats);
};

Scheduler::Scheduler(Engine& engine, uint32_t token_budget, uint32_t max_running, uint32_t max_kv_blocks)
    : impl_(std::make_unique<Impl>(engine, token_budget, max_running, max_kv_blocks)) {}
Scheduler::~Scheduler() {
    for (auto& [id, g] : impl_->gens)
        if (g.started) impl_->engine.free_sequence(g.seq);
}

RequestId Scheduler::submit(GenerationRequest request) {
    if (request.prompt.empty())
        throw Error(ErrorCode::InvalidArgument, "a generation request needs a prompt");
    if (request.prompt.size() >= impl_->engine.context_length())
        throw Error(ErrorCode::ContextFull, "the prompt (" + std::to_string(request.prompt.size()) +
                                                " tokens) does not fit the context");
    const uint32_t capacity = impl_->capacity();
    if (impl_->blocks_for(request.prompt.size()) > capacity)
        throw Error(ErrorCode::ContextFull, "the prompt (" + std::to_string(request.prompt.size()) +
                                                " tokens) does not fit the KV cache the replies share (" +
                                                std::to_string(uint64_t{capacity} * impl_->block_tokens) +
                                                " tokens)");
    validate(request.settings);
    RequestId id = impl_->next_id++;
    Impl::Generation g;
    g.id = id;
    uint64_t seed = request.settings.seed ? *request.settings.seed : Sampler::random_seed();
    g.sampler = std::make_unique<Sampler>(seed);
    g.sampler->set_eos_tokens(request.stop_tokens);
    g.history = request.prompt;
    g.feed = request.prompt;
    g.req = std::move(request);
    impl_->gens.emplace(id, std::move(g));
    impl_->order.push_back(id);
    return id;
}

void Scheduler::cancel(RequestId id) {
    auto it = impl_->gens.find(id);
    if (it != impl_->gens.end()) it->second.cancelled = true;
}

size_t Scheduler::pending() const {
    return impl_->gens.size();
}
size_t Scheduler::waiting() const {
    return impl_->gens.size() - impl_->started_count();
}
uint64_t Scheduler::preemptions() const {
    return impl_->preemptions;
}
std::vector<SequenceId> Scheduler::sequences() const {
    std::vector<SequenceId> held;
    for (const RequestId id : impl_->order) {
        const auto it = impl_->gens.find(id);
        if (it != impl_->gens.end() && it->second.started) held.push_back(it->second.seq);
    }
    return held;
}

bool Scheduler::step(SchedulerStepStats* stats) {
    return impl_->run_step(nullptr, nullptr, 0, stats);
}

bool Scheduler::step_with(const StepItem& outside, std::vector<float>& outside_logits, uint32_t max_tokens,
                          SchedulerStepStats* stats) {
    if (outside.tokens.empty() || !outside.want_logits || outside.want_all_logits)
        throw Error(ErrorCode::InvalidArgument,
                    "a step's outside item needs tokens and wants its last token's logits");
    outside_logits.clear();
    return impl_->run_step(&outside, &outside_logits, max_tokens, stats);
}

bool Scheduler::Impl::run_step(const StepItem* outside, std::vector<float>* outside_logits,
                               uint32_t max_tokens, SchedulerStepStats* stats) {
    auto& I = *this;
    // Cancellations take effect between steps.
    for (auto id : std::vector<RequestId>(I.order.begin(), I.order.end()))
        if (I.gens.at(id).cancelled) I.finish(I.gens.at(id), StopReason::Cancelled);
    if (I.gens.empty() && !outside) return false;

    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t preempted_before = I.preemptions;
    // The outside item goes first: its tokens out of the budget, its new blocks out of the free
    // ones (not out of the generations' share: its sequence's room is the host's).
    const uint32_t budget = max_tokens ? std::min(max_tokens, I.budget) : I.budget;
    uint32_t outside_blocks = 0, outside_tokens = 0;
    if (outside) {
        const size_t len = I.engine.sequence_length(outside->sequence);
        outside_tokens = static_cast<uint32_t>(outside->tokens.size());
        outside_blocks = I.blocks_for(len + outside_tokens) - I.blocks_for(len);
    }
    // 0. Room for every running generation's next token, or preempt from the back of the queue
    // (the generation admitted last) until the rest have it.
    uint32_t room = I.room(outside_blocks);  // again only where a sequence's blocks change before the step
    while (true) {
        uint32_t need = 0;
        for (const auto& [id, g] : I.gens) need += g.next_token >= 0 ? I.growth(g, 1) : 0;
        if (need <= room) break;
        Impl::Generation* last = I.last_started();
        if (!last) break;  // the outside item alone lacks room: the engine step says so
        I.make_room_without(*last);
        room = I.room(outside_blocks);
    }

    std::vector<StepItem> items;
    std::vector<RequestId> owners;
    // promised: blocks this step's items take
    uint32_t used = outside_tokens, running = 0, promised = 0;
    const auto available = [&] { return room > promised ? room - promised : 0; };
    // 1. Decodes of running generations (one token each).
    for (RequestId id : I.order) {
        auto& g = I.gens.at(id);
        g.chunk = 0;
        if (g.started) ++running;
        if (g.next_token < 0 || used >= budget) continue;
        items.push_back({g.seq, {g.next_token}, true, false});
        owners.push_back(id);
        promised += I.growth(g, 1);
        ++used;
    }
    const uint32_t decodes = used - outside_tokens;
    // 2. Prompt chunks in queue order: of the started generations, then of those admitted now
    // (first come, first served: admission stops at the first whose prompt does not fit beside
    // what the started ones still need, one block each for their next token included).
    const auto add_chunk = [&](Impl::Generation& g) {
        size_t n = std::min<size_t>(budget - used, g.feed.size() - g.prefilled);
        const size_t len = I.length(g);
        n = std::min<size_t>(
            n, size_t{I.blocks_for(len)} * I.block_tokens - len + size_t{available()} * I.block_tokens);
        if (n == 0) return;
        promised += I.growth(g, n);
        g.chunk = n;
        StepItem item{g.seq, {}, false, false};
        item.tokens.assign(g.feed.begin() + static_cast<long>(g.prefilled),
                           g.feed.begin() + static_cast<long>(g.prefilled + n));
        item.want_logits = g.prefilled + n == g.feed.size();
        items.push_back(std::move(item));
        owners.push_back(g.id);
        used += static_cast<uint32_t>(n);
    };
    const auto still_needs = [&](const Impl::Generation& g) {
        if (g.next_token >= 0) return 1u;
        return I.blocks_for(g.feed.size()) -
               std::min(I.blocks_for(g.feed.size()), I.blocks_for(I.length(g) + g.chunk)) + 1;
    };
    uint32_t reserve = 0;
    for (RequestId id : std::vector<RequestId>(I.order.begin(), I.order.end())) {
        auto& g = I.gens.at(id);
        if (g.started) {
            if (g.next_token < 0 && used < budget) add_chunk(g);
            reserve += still_needs(g);
            continue;
        }
        if (used >= budget || running >= I.max_running) break;
        if (I.blocks_for(g.feed.size()) + reserve > available()) {
            if (running > 0) break;  // it waits for the running ones to finish or be preempted
            // Nothing else holds blocks, and still no room (a sequence outside holds them): it
            // cannot run now, nor wait for a generation that would free them.
            I.finish(g, StopReason::ContextFull);
            continue;
        }
        g.seq = I.engine.create_sequence();
        g.started = true;
        g.prefilled = I.engine.attach_cached_prefix(g.seq, g.feed);
        room = I.room(outside_blocks);  // the blocks it took from the prefix cache are no longer free
        if (!g.admitted) {
            g.admitted = true;
            if (g.req.on_admitted) g.req.on_admitted(id, static_cast<uint32_t>(g.prefilled));
        }
        ++running;
        add_chunk(g);
        reserve += still_needs(g);
    }
    if (items.empty()) {
        // Started generations that are all prefilling and none has room: the last one gives way
        // (not when the outside item took the whole budget: then there was no room to look for).
        if (used < budget)
            if (Impl::Generation* g = I.last_started()) I.make_room_without(*g);
        if (!outside) {
            if (stats) {
                *stats = {};
                stats->preempted = static_cast<uint32_t>(I.preemptions - preempted_before);
            }
            return !I.gens.empty();
        }
    }

    const size_t own = items.size();
    if (outside) items.push_back(*outside);
    auto logits = I.engine.step(items);
    if (outside) {
        // Handed over before any generation's callbacks run, so that a caller catching an
        // exception from one still knows its item is in its sequence.
        *outside_logits = std::move(logits.back());
        logits.pop_back();
        items.pop_back();
    }
    size_t row = 0;
    for (size_t i = 0; i < own; ++i) {
        auto& g = I.gens.at(owners[i]);
        if (i < decodes) {
            g.next_token = -1;
            I.accept(g, logits[row++]);
        } else {
            g.prefilled += items[i].tokens.size();
            if (items[i].want_logits) I.accept(g, logits[row++]);
        }
    }
    if (stats) {
        stats->decode_tokens = decodes;
        stats->prefill_tokens = used - outside_tokens - decodes;
        stats->outside_tokens = outside_tokens;
        stats->sequences = static_cast<uint32_t>(own);
        stats->preempted = static_cast<uint32_t>(I.preemptions - preempted_before);
        stats->waiting = static_cast<uint32_t>(I.gens.size()) - I.started_count();
        stats->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    return true;
}

void Scheduler::run() {
    while (step()) {
    }
}

}  // namespace lantern
