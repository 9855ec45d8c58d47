// Retranslate — the texts a widget words once (captions, tooltips, placeholders, titles), each kept
// as the call that sets it, so that the widget's retranslateUi() sets them all again when View >
// Language switches the interface (QEvent::LanguageChange, see Language.h).
//
//   texts_([label] { label->setText(tr("Randomness")); });  // set now, and at every apply()
//
// The calls keep tr() where the widget is built, so the source texts and their contexts stay as
// lupdate knows them; texts that show live values are worded again by the widget's update path.
#pragma once
#include <QFormLayout>
#include <QLabel>
#include <functional>
#include <utility>
#include <vector>

class Retranslate {
public:
    // Sets the text now and again at every apply().
    template <typename Set>
    void operator()(Set&& set) {
        set();
        sets_.emplace_back(std::forward<Set>(set));
    }
    void apply() const {
        for (const auto& set : sets_) set();
    }

private:
    std::vector<std::function<void()>> sets_;
};

// A form row with an empty caption label, for the caller to word (with a Retranslate).
template <typename Field>
QLabel* captionedRow(QFormLayout* form, Field* field) {
    auto* caption = new QLabel(form->parentWidget());
    form->addRow(caption, field);
    return caption;
}
