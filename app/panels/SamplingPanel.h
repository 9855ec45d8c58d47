// SamplingPanel — the sampler knobs. Every change is emitted at once as a complete
// lantern::SamplingSettings; the main window hands it straight to the InferenceWorker's settings
// slot, so a change made while a reply is being generated applies from the next token on.
//
// It also shows the seed the last reply used (so a good one can be pinned) and the candidates the
// model offered for the last token.
#pragma once
#include <QWidget>
#include <optional>

#include "Retranslate.h"
#include "lantern/chat.h"
#include "lantern/sampling.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSlider;
class QSpinBox;
class CandidateBars;

class SamplingPanel : public QWidget {
    Q_OBJECT
public:
    explicit SamplingPanel(QWidget* parent = nullptr);

    lantern::SamplingSettings settings() const;
    // Shows `settings` without emitting settingsChanged.
    void setSettings(const lantern::SamplingSettings& settings);
    // The seed the last generation actually used ("random" seeds are reported by the engine).
    void setSeedUsed(uint64_t seed);
    std::optional<uint64_t> seedUsed() const { return seedUsed_; }
    void showCandidates(const std::vector<lantern::TokenCandidate>& candidates, int32_t chosenToken);
    // On a remote server (kind: its name; which of top-k, min-p, the repeat penalty and its window
    // it takes): says what reaches it, disables what does not; `local` undoes it.
    void setRemote(const QString& server, bool topK, bool minP, bool repeatPenalty, bool penaltyWindow);
    void setLocal();
    QString remoteNote() const;  // "" while local

    // Stop strings as typed: one per line, with \n and \t standing for newline and tab.
    static std::vector<std::string> parseStopStrings(const QString& text);
    static QString formatStopStrings(const std::vector<std::string>& stops);

signals:
    void settingsChanged(const lantern::SamplingSettings& settings);

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    void emitChanged();
    void resetToDefaults();

    QSlider* temperatureSlider_;
    QDoubleSpinBox* temperature_;
    QSpinBox* topK_;
    QDoubleSpinBox* topP_;
    QDoubleSpinBox* minP_;
    QDoubleSpinBox* repeatPenalty_;
    QDoubleSpinBox* presencePenalty_;
    QDoubleSpinBox* frequencyPenalty_;
    QSpinBox* penaltyWindow_;
    QCheckBox* fixedSeed_;
    QLineEdit* seed_;
    QLabel* seedUsedLabel_;
    QPushButton* keepSeed_;
    QSpinBox* maxTokens_;
    QPlainTextEdit* stopStrings_;
    CandidateBars* candidates_;
    QLabel* remoteNote_;
    QLabel* candidatesNote_;
    std::optional<uint64_t> seedUsed_;
    bool updating_ = false;
    Retranslate texts_;
    struct Remote {
        QString server;
        bool topK, minP, repeatPenalty, penaltyWindow;
    };
    std::optional<Remote> remote_;  // setRemote's, while on a remote server
};
