/// Hand-written UTC calendar arithmetic (proleptic Gregorian), after Howard Hinnant's
/// `days_from_civil` / `civil_from_days`. Deterministic and allocation-free.
enum CivilTime {
    static let millisPerDay: Int64 = 86_400_000
    /// 0000-01-01T00:00:00.000Z.
    static let minMillis: Int64 = -62_167_219_200_000
    /// 9999-12-31T23:59:59.999Z.
    static let maxMillis: Int64 = 253_402_300_799_999

    /// Days since 1970-01-01 for a civil date.
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date of a day count since 1970-01-01.
    static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func isLeap(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Appends `value` as exactly `width` zero-padded decimal digits.
    static func appendDigits(_ value: Int64, width: Int, to out: inout [UInt8]) {
        let end = out.count + width
        for _ in 0..<width { out.append(UInt8(ascii: "0")) }
        var v = value
        var i = end - 1
        while v > 0, i >= end - width {
            out[i] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
            i -= 1
        }
    }

    /// `yyyy-mm-dd` of the UTC day containing `ms`, appended to `out`.
    static func appendDay(_ ms: Int64, to out: inout [UInt8]) {
        let days = floorDiv(ms, millisPerDay)
        let (y, m, d) = date(days: days)
        appendDigits(y, width: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(m, width: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(d, width: 2, to: &out)
    }

    /// `yyyy-mm-ddThh:mm:ss.mmmZ`, appended to `out`; `ms` must lie in `minMillis...maxMillis`.
    static func appendInstant(_ ms: Int64, to out: inout [UInt8]) {
        appendDay(ms, to: &out)
        let msOfDay = ms - floorDiv(ms, millisPerDay) * millisPerDay
        out.append(UInt8(ascii: "T"))
        appendDigits(msOfDay / 3_600_000, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(msOfDay / 60_000 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(msOfDay / 1000 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(msOfDay % 1000, width: 3, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// Parses `yyyy-mm-ddThh:mm:ss[.f{1,3}]Z` from the start of `bytes`, returning the instant and the
    /// number of bytes used. With `exactFraction`, exactly 3 fractional digits are required.
    static func parseInstant(_ bytes: UnsafeBufferPointer<UInt8>, exactFraction: Bool) -> (millis: Int64, length: Int)? {
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var v: Int64 = 0
            for i in start..<(start + count) {
                let d = bytes[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                v = v * 10 + Int64(d)
            }
            return v
        }
        func byte(_ i: Int, _ c: Unicode.Scalar) -> Bool { i < bytes.count && bytes[i] == UInt8(ascii: c) }
        guard let year = number(0, 4), byte(4, "-"), let month = number(5, 2), byte(7, "-"),
            let day = number(8, 2), byte(10, "T"), let hour = number(11, 2), byte(13, ":"),
            let minute = number(14, 2), byte(16, ":"), let second = number(17, 2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var pos = 19
        var millis: Int64 = 0
        if byte(pos, ".") {
            pos += 1
            var digits = 0
            while digits < 3, let d = number(pos, 1) {
                millis = millis * 10 + d
                digits += 1
                pos += 1
            }
            guard digits >= 1, !exactFraction || digits == 3, number(pos, 1) == nil else { return nil }
            for _ in digits..<3 { millis *= 10 }
        } else if exactFraction {
            return nil
        }
        guard byte(pos, "Z") else { return nil }
        let total = days(year: year, month: month, day: day) * millisPerDay
            + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis
        return (total, pos + 1)
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
