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
        bool started = false;
        size_t prefilled = 0;          // prompt tokens already in the sequence
        std::vector<int32_t> history;  // prompt + generated (penalty window)
        int32_t next_token = -1;       // sampled, not yet fed
        uint32_t generated = 0;
        std::unique_ptr<Sampler> sampler;
        bool cancelled = false;
    };

    Engine& engine;
    uint32_t budget, max_running;
    RequestId next_id = 1;
    std::map<RequestId, Generation> gens;
    std::deque<RequestId> order;  // admission order (FIFO)

    Impl(Engine& e, uint32_t b, uint32_t m) : engine(e), budget(std::max<uint32_t>(1, b)), max_running(std::max<uint32_t>(1, m)) {}

    void finish(Generation& g, const std::string& reason) {
        if (g.started) engine.free_sequence(g.seq);
        if (g.req.on_finish) g.req.on_finish(g.id, reason);
        order.erase(std::find(order.begin(), order.end(), g.id));
        gens.erase(g.id);
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
        if (std::find(g.req.stop_tokens.begin(), g.req.stop_tokens.end(), s.token) != g.req.stop_tokens.end()) {
            finish(g, "eos");
            return false;
        }
        g.history.push_back(s.token);
        ++g.generated;
        if (g.req.on_sample) g.req.on_sample(g.id, s);
        if (g.req.on_token) g.req.on_token(g.id, s.token);
        if (g.req.settings.max_new_tokens > 0 && g.generated >= static_cast<uint32_t>(g.req.settings.max_new_tokens)) {
            finish(g, "max_tokens");
            return false;
        }
        if (engine.sequence_length(g.seq) + 1 > engine.context_length()) {
            finish(g, "context_full");
            return false;
        }
        g.next_token = s.token;
        return true;
    }
};

Scheduler::Scheduler(Engine& engine, uint32_t token_budget, uint32_t max_running)
    : impl_(std::make_unique<Impl>(engine, token_budget, max_running)) {}
Scheduler::~Scheduler() {
    for (auto& [id, g] : impl_->gens)
        if (g.started) impl_->engine.free_sequence(g.seq);
}

RequestId Scheduler::submit(GenerationRequest request) {
    if (request.prompt.empty()) throw Error(ErrorCode::InvalidArgument, "a generation request needs a prompt");
    if (request.prompt.size() >= impl_->engine.context_length())
        throw Error(ErrorCode::ContextFull, "the prompt (" + std::to_string(request.prompt.size()) +
                                                " tokens) does not fit the context");
    validate(request.settings);
    RequestId id = impl_->next_id++;
    Impl::Generation g;
    g.id = id;
    uint64_t seed = request.settings.seed ? *request.settings.seed : Sampler::random_seed();
    g.sampler = std::make_unique<Sampler>(seed);
    g.sampler->set_eos_tokens(request.stop_tokens);
    g.history = request.prompt;
    g.req = std::move(request);
    impl_->gens.emplace(id, std::move(g));
    impl_->order.push_back(id);
    return id;
}

void Scheduler::cancel(RequestId id) {
    auto it = impl_->gens.find(id);
    if (it != impl_->gens.end()) it->second.cancelled = true;
}

size_t Scheduler::pending() const { return impl_->gens.size(); }

bool Scheduler::step(SchedulerStepStats* stats) {
    auto& I = *impl_;
    // Cancellations take effect between steps.
    for (auto id : std::vector<RequestId>(I.order.begin(), I.order.end()))
        if (I.gens.at(id).cancelled) I.finish(I.gens.at(id), "cancelled");
    if (I.gens.empty()) return false;

    const auto t0 = std::chrono::steady_clock::now();
    std::vector<StepItem> items;
    std::vector<RequestId> owners;
    uint32_t used = 0, running = 0;
    // 1. Decodes of running generations (one token each).
    for (RequestId id : I.order) {
        auto& g = I.gens.at(id);
        if (g.next_token < 0 || used >= I.budget) continue;
        items.push_back({g.seq, {g.next_token}, true, false});
        owners.push_back(id);
        ++used;
        ++running;
    }
    uint32_t decodes = used;
    // 2. Prompt chunks, in admission order, while budget and running slots remain.
    for (RequestId id : I.order) {
        auto& g = I.gens.at(id);
        if (g.next_token >= 0 || used >= I.budget) continue;
        if (!g.started) {
            if (running >= I.max_running) continue;
            g.seq = I.engine.create_sequence();
            g.started = true;
            g.prefilled = I.engine.attach_cached_prefix(g.seq, g.req.prompt);
            if (g.req.on_admitted) g.req.on_admitted(id, static_cast<uint32_t>(g.prefilled));
        }
        ++running;
        size_t n = std::min<size_t>(I.budget - used, g.req.prompt.size() - g.prefilled);
        StepItem item{g.seq, {}, false, false};
        item.tokens.assign(g.req.prompt.begin() + static_cast<long>(g.prefilled),
                           g.req.prompt.begin() + static_cast<long>(g.prefilled + n));
        item.want_logits = g.prefilled + n == g.req.prompt.size();
        items.push_back(std::move(item));
        owners.push_back(id);
        used += static_cast<uint32_t>(n);
    }
    if (items.empty()) return false;

    auto logits = I.engine.step(items);
    size_t row = 0;
    for (size_t i = 0; i < items.size(); ++i) {
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
        stats->prefill_tokens = used - decodes;
        stats->sequences = static_cast<uint32_t>(items.size());
        stats->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    return true;
}

void Scheduler::run() {
    while (step()) {
    }
}

}  // namespace lantern
