#include "worker/EngineTypes.h"

#include <algorithm>
#include <cmath>

#include <QCoreApplication>

void registerEngineMetaTypes() {
    qRegisterMetaType<lantern::SamplingSettings>();
    qRegisterMetaType<lantern::ModelInfo>();
    qRegisterMetaType<lantern::DeviceInfo>();
    qRegisterMetaType<lantern::TurnStats>();
    qRegisterMetaType<lantern::MessageFit>();
    qRegisterMetaType<lantern::AttentionSnapshot>();
    qRegisterMetaType<lantern::StepProfile>();
    qRegisterMetaType<LoadReport>();
    qRegisterMetaType<KvSnapshot>();
    qRegisterMetaType<TokenCandidates>();
    qRegisterMetaType<TokenBatch>();
    qRegisterMetaType<DeviceList>();
    qRegisterMetaType<ConversationTokens>();
}

AttentionRow AttentionRow::from(const lantern::AttentionSnapshot& s) {
    AttentionRow row;
    row.position = s.position;
    row.layer = s.layer;
    row.heads = s.n_heads;
    row.nPositions = s.n_positions;
    const size_t n = s.n_positions;
    if (s.probs.size() < static_cast<size_t>(s.n_heads) * n) return row;
    row.headMax.resize(s.n_heads);
    row.weights.resize(static_cast<size_t>(s.n_heads) * n);
    for (uint32_t h = 0; h < s.n_heads; ++h) {
        const float* p = s.probs.data() + static_cast<size_t>(h) * n;
        const float top = n == 0 ? 0.0f : *std::max_element(p, p + n);
        row.headMax[h] = top;
        for (size_t j = 0; j < n; ++j)
            row.weights[h * n + j] = top > 0 ? static_cast<quint8>(std::lround(255.0f * p[j] / top)) : 0;
    }
    return row;
}

std::vector<float> AttentionRow::over(int head) const {
    std::vector<float> out(nPositions, 0.0f);
    if (weights.size() < static_cast<size_t>(heads) * nPositions || heads == 0) return out;
    const auto add = [&](uint32_t h, float scale) {
        for (uint32_t j = 0; j < nPositions; ++j)
            out[j] += scale * headMax[h] * static_cast<float>(weights[h * nPositions + j]) / 255.0f;
    };
    if (head >= 0 && head < static_cast<int>(heads)) {
        add(static_cast<uint32_t>(head), 1.0f);
    } else {
        for (uint32_t h = 0; h < heads; ++h) add(h, 1.0f / static_cast<float>(heads));
    }
    return out;
}

QString deviceTypeDescription(lantern::DeviceType type) {
    switch (type) {
        case lantern::DeviceType::DiscreteGpu:
            return QCoreApplication::translate("Device", "discrete GPU");
        case lantern::DeviceType::IntegratedGpu:
            return QCoreApplication::translate("Device", "integrated GPU");
        case lantern::DeviceType::VirtualGpu:
            return QCoreApplication::translate("Device", "virtual GPU");
        case lantern::DeviceType::Cpu:
            return QCoreApplication::translate("Device", "CPU (software Vulkan)");
        case lantern::DeviceType::Other:
            break;
    }
    return QCoreApplication::translate("Device", "other device");
}

QString deviceDescription(const lantern::DeviceInfo& device) {
    return QCoreApplication::translate("Device", "%1 — %2")
        .arg(QString::fromStdString(device.name), deviceTypeDescription(device.type));
}
