// A status-bar field whose text changes many times a second while a reply streams (the token
// count, the context position). A plain QLabel re-lays out its parents on every new text, and in
// the status bar that means the whole main window (what that cost:
// docs/decisions/0034-streaming-does-not-relayout-the-window.md). This label keeps a fixed size
// that grows when a text does not fit, so most new texts only repaint it; setFittedText() sizes it
// to its text again (for rare changes: the app's state). UI thread only.
#pragma once
#include <QLabel>

class StatusLabel : public QLabel {
public:
    using QLabel::QLabel;
    void setLiveText(const QString& text);    // frequent: grows, never shrinks
    void setFittedText(const QString& text);  // rare: exactly as wide as the text

protected:
    void changeEvent(QEvent* event) override;

private:
    void fit();
};
