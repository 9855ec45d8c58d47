#include "worker/EngineTypes.h"

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
