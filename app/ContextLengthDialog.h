// ContextLengthDialog — how many tokens of conversation the model keeps in view (File > Context
// Length…). For the length being picked it shows the device memory it takes — the plan
// lantern::plan_memory makes, which Engine::load checks too — and refuses a length the device
// cannot hold before anything is reloaded.
#pragma once
#include <QDialog>
#include <cstdint>

#include "Retranslate.h"
#include "lantern/device.h"
#include "lantern/engine.h"
#include "lantern/memory_plan.h"

class QCheckBox;
class QDialogButtonBox;
class QLabel;
class QSpinBox;

class ContextLengthDialog : public QDialog {
    Q_OBJECT
public:
    // `chosen`: the length asked for so far (0 = automatic); `sequences`: conversations the KV
    // cache will hold at full context (InferenceWorker::kvConversationsFor: the chat's, and while
    // the API server is on, the room its replies share);
    // `conversationTokens`: how long the open conversation is, to say when a shorter context would
    // leave its start out.
    ContextLengthDialog(const lantern::ModelInfo& model, const lantern::DeviceInfo& device, uint32_t chosen,
                        uint32_t sequences, uint32_t conversationTokens, QWidget* parent = nullptr);

    uint32_t chosenLength() const;  // 0 = automatic (the model's, at most 4096)
    void setChosenLength(uint32_t length);
    const lantern::MemoryPlan& plan() const { return plan_; }

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    void update();

    lantern::ModelInfo model_;
    lantern::DeviceInfo device_;
    uint32_t sequences_ = 1;
    uint32_t conversationTokens_ = 0;
    lantern::MemoryPlan plan_;
    QCheckBox* automatic_ = nullptr;
    QSpinBox* length_ = nullptr;
    QLabel* memory_ = nullptr;
    QLabel* warning_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
    Retranslate texts_;
};
