import Foundation

/// The words of one day's flare forecast, what the notification and the forecast screen show:
/// `daily_forecasts.forecast_summary`, `why_explanation`, `comfort_tip` and `daily_insight`, and the
/// language they are in (`forecast_locale`). They come from the team's insight service
/// (`ForecastInsight.parse`), or, without it or when it fails, from herald's own templates:
///
///     ForecastWords.templated(risk: .low, locale: "ar")
///     // summary "يُتوقع ضغط جوي مستقر. …", why …, comfort tip …, daily_insight
///     //   {"summary_sentence": …, "why_line": …, "comfort_tip": …, "sign_off": …}, locale "ar"
///
/// The templates speak English, Arabic and Brazilian Portuguese (`ar…` → Arabic, `pt…` → Portuguese,
/// anything else English); the summaries are the flare forecast design's example texts per risk level.
public struct ForecastWords: Sendable, Equatable {
    public var summary: String
    public var why: String
    public var comfortTip: String
    /// The design's daily insight object (`summary_sentence`, `why_line`, `comfort_tip`, `sign_off`).
    public var dailyInsight: JSONValue
    /// The language of the words: `en`, `ar` or `pt-BR`.
    public var locale: String

    public init(summary: String, why: String, comfortTip: String, dailyInsight: JSONValue? = nil, locale: String) {
        self.summary = summary
        self.why = why
        self.comfortTip = comfortTip
        self.dailyInsight = dailyInsight ?? ["summary_sentence": .string(summary), "why_line": .string(why),
                                             "comfort_tip": .string(comfortTip)]
        self.locale = locale
    }

    /// herald's own words for `risk`, in the language of `locale`.
    public static func templated(risk: RiskLevel, locale: String) -> ForecastWords {
        let lang = Templates.language(locale)
        let summary = Templates.forecastSummary(lang, risk: risk.rawValue) ?? ""
        let why = Templates.forecastWhy(lang, risk: risk)
        let tip = Templates.forecastComfortTip(lang, risk: risk)
        return ForecastWords(summary: summary, why: why, comfortTip: tip, dailyInsight: [
            "summary_sentence": .string(summary), "why_line": .string(why), "comfort_tip": .string(tip),
            "sign_off": .string(Templates.forecastSignOff(lang)),
        ], locale: lang.rawValue)
    }

    /// The language tag herald stores for `locale`: `en`, `ar` or `pt-BR`.
    public static func language(_ locale: String) -> String { Templates.language(locale).rawValue }
}

extension Templates {
    /// Why bodies may notice the day's weather, per risk level.
    static func forecastWhy(_ l: Language, risk: RiskLevel) -> String {
        switch (risk, l) {
        case (.low, .en): "Air pressure should hold steady over the next day. Steady pressure tends to be easier on joints and tissues."
        case (.moderate, .en): "Air pressure is expected to fall over the next day. Some bodies notice a change like this in their joints."
        case (.high, .en): "Air pressure is expected to drop sharply over the next day. A fast drop can leave joints and tissues feeling tighter."
        case (.low, .ar): "يُتوقع أن يبقى الضغط الجوي مستقرًا خلال اليوم القادم. الضغط المستقر عادةً أخف على المفاصل والأنسجة."
        case (.moderate, .ar): "يُتوقع أن ينخفض الضغط الجوي خلال اليوم القادم. يلاحظ بعض الناس تغيّرًا كهذا في مفاصلهم."
        case (.high, .ar): "يُتوقع أن ينخفض الضغط الجوي بشدة خلال اليوم القادم. قد يجعل الانخفاض السريع المفاصل والأنسجة أكثر تيبسًا."
        case (.low, .ptBR): "A pressão do ar deve se manter estável no próximo dia. Pressão estável costuma ser mais leve para articulações e tecidos."
        case (.moderate, .ptBR): "A pressão do ar deve cair no próximo dia. Algumas pessoas sentem uma mudança assim nas articulações."
        case (.high, .ptBR): "A pressão do ar deve cair bastante no próximo dia. Uma queda rápida pode deixar articulações e tecidos mais rígidos."
        }
    }

    /// An Eastern medicine comfort tip, per risk level.
    static func forecastComfortTip(_ l: Language, risk: RiskLevel) -> String {
        switch (risk, l) {
        case (.low, .en): "Keep your qi flowing with an easy walk and a warm drink."
        case (.moderate, .en): "Gentle movement such as tai chi or slow stretching helps the body adjust."
        case (.high, .en): "Keep warm, rest more, and try slow, deep breathing to ease tension."
        case (.low, .ar): "حافظ على تدفق طاقتك بمشي خفيف ومشروب دافئ."
        case (.moderate, .ar): "تساعد الحركة اللطيفة مثل التاي تشي أو التمدد البطيء الجسم على التكيّف."
        case (.high, .ar): "ابقَ دافئًا، وخذ قسطًا أكبر من الراحة، وجرّب التنفس العميق البطيء لتخفيف التوتر."
        case (.low, .ptBR): "Mantenha o qi fluindo com uma caminhada leve e uma bebida quente."
        case (.moderate, .ptBR): "Movimentos suaves como tai chi ou alongamentos lentos ajudam o corpo a se ajustar."
        case (.high, .ptBR): "Mantenha-se aquecido, descanse mais e experimente respirar devagar e fundo para aliviar a tensão."
        }
    }

    static func forecastSignOff(_ l: Language) -> String {
        switch l {
        case .en: "Take care today."
        case .ar: "اعتنِ بنفسك اليوم."
        case .ptBR: "Cuide-se hoje."
        }
    }
}
