//! The benchmark's users, deterministic and realistic: a dealer's customers
//! in Kazakhstan, Germany and Poland, most of them people, the rest
//! companies and sole traders with their legal names, tax numbers and
//! addresses; names in their own scripts (Cyrillic, Latin with diacritics)
//! and logins in ASCII; national phone numbers; passwords as people pick
//! them; a few discounts, device limits and comments.

use crate::fleet::SplitMix64;

/// One row of an upload file, in the columns of document 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// E-mail login (lower case).
    pub login: String,
    /// Password, 8 to 16 printable characters.
    pub password: String,
    /// Allowed to log in.
    pub active: bool,
    /// 1 individual, 2 legal entity, 3 sole trader.
    pub legal_status: u8,
    /// Surname.
    pub surname: String,
    /// Given name.
    pub name: String,
    /// Middle name (patronymic), often empty.
    pub middle_name: String,
    /// Digits only, or empty.
    pub phone: String,
    /// The dealer's note, often empty.
    pub comment: String,
    /// Postal address: country, region, city, street, zip code.
    pub address: [String; 5],
    /// Companies' and sole traders' name.
    pub legal_name: String,
    /// Tax number.
    pub tax_number: String,
    /// Legal entities' IEC (Kazakhstan's KBE-like code).
    pub iec: String,
    /// Registered address, as the postal one for most companies.
    pub registered: [String; 5],
    /// Percent, written with a decimal comma, or empty.
    pub discount: String,
    /// `YYYY-MM-DD`, with a discount only.
    pub discount_end: String,
    /// Devices at most, or empty.
    pub device_limit: String,
}

/// The header row of document 2 (required columns marked `*`), in the
/// order of the document's template.
pub const HEADER: [&str; 25] = [
    "Email address*",
    "Password*",
    "Status*",
    "Legal status*",
    "Surname*",
    "Name*",
    "Middle name",
    "Phone number",
    "Comment",
    "Country",
    "Region",
    "City",
    "Street, address",
    "Zip code",
    "Legal name",
    "Tax number",
    "IEC",
    "Registration country",
    "Registration region",
    "Registration city",
    "Registration address",
    "Registration zip code",
    "Discount",
    "End date of discount",
    "Device limit",
];

impl Person {
    /// The row's cells in the order of [`HEADER`].
    pub fn cells(&self) -> [&str; 25] {
        let [country, region, city, street, zip] = &self.address;
        let [r_country, r_region, r_city, r_street, r_zip] = &self.registered;
        [
            &self.login,
            &self.password,
            if self.active { "1" } else { "0" },
            ["1", "2", "3"][usize::from(self.legal_status.clamp(1, 3) - 1)],
            &self.surname,
            &self.name,
            &self.middle_name,
            &self.phone,
            &self.comment,
            country,
            region,
            city,
            street,
            zip,
            &self.legal_name,
            &self.tax_number,
            &self.iec,
            r_country,
            r_region,
            r_city,
            r_street,
            r_zip,
            &self.discount,
            &self.discount_end,
            &self.device_limit,
        ]
    }
}

/// A name in its own script and the ASCII form logins use.
type Name = (&'static str, &'static str);

struct Country {
    name: &'static str,
    /// Share of the dealer's customers, relative.
    weight: u32,
    /// Phone numbers: country code, then this many more digits.
    phone_code: &'static str,
    phone_digits: u32,
    /// Region, city, zip code prefix, streets.
    cities: &'static [(&'static str, &'static str, &'static str)],
    streets: &'static [&'static str],
    male: &'static [Name],
    female: &'static [Name],
    /// Surnames: male form, female form, ASCII.
    surnames: &'static [(&'static str, &'static str, &'static str)],
    /// Patronymics from a father's name (male, female), or none.
    patronymics: &'static [(&'static str, &'static str)],
    companies: &'static [&'static str],
    company_forms: (&'static str, &'static str),
    mail_domains: &'static [&'static str],
    tax_digits: u32,
}

const KAZAKHSTAN: Country = Country {
    name: "Kazakhstan",
    weight: 55,
    phone_code: "7",
    phone_digits: 10,
    cities: &[
        ("Almaty", "Almaty", "050"),
        ("Astana", "Astana", "010"),
        ("Karaganda Region", "Karaganda", "100"),
        ("Aktobe Region", "Aktobe", "030"),
        ("Turkistan Region", "Shymkent", "160"),
        ("Pavlodar Region", "Pavlodar", "140"),
        ("Atyrau Region", "Atyrau", "060"),
    ],
    streets: &[
        "Abay Ave",
        "Dostyk Ave",
        "Tole Bi St",
        "Satpayev St",
        "Al-Farabi Ave",
        "Kabanbay Batyr Ave",
        "Zhibek Zholy St",
        "Seifullin Ave",
    ],
    male: &[
        ("Нурлан", "nurlan"),
        ("Ерлан", "erlan"),
        ("Даулет", "daulet"),
        ("Асхат", "askhat"),
        ("Арман", "arman"),
        ("Сергей", "sergey"),
        ("Dmitry", "dmitry"),
        ("Алексей", "alexey"),
        ("Timur", "timur"),
        ("Бауыржан", "baurzhan"),
        ("Марат", "marat"),
        ("Andrey", "andrey"),
    ],
    female: &[
        ("Айгерим", "aigerim"),
        ("Dana", "dana"),
        ("Мадина", "madina"),
        ("Анна", "anna"),
        ("Гульнара", "gulnara"),
        ("Aliya", "aliya"),
        ("Елена", "elena"),
        ("Жанар", "zhanar"),
        ("Saule", "saule"),
        ("Ольга", "olga"),
    ],
    surnames: &[
        ("Сейткали", "Сейткали", "seitkali"),
        ("Ахметов", "Ахметова", "akhmetov"),
        ("Нурпеисов", "Нурпеисова", "nurpeisov"),
        ("Иванов", "Иванова", "ivanov"),
        ("Kim", "Kim", "kim"),
        ("Жумабаев", "Жумабаева", "zhumabaev"),
        ("Смагулов", "Смагулова", "smagulov"),
        ("Petrov", "Petrova", "petrov"),
        ("Касымов", "Касымова", "kassymov"),
        ("Омаров", "Омарова", "omarov"),
        ("Tsoi", "Tsoi", "tsoi"),
        ("Байжанов", "Байжанова", "baizhanov"),
        ("Кузнецов", "Кузнецова", "kuznetsov"),
        ("Абдрахманов", "Абдрахманова", "abdrakhmanov"),
    ],
    patronymics: &[
        ("Серикович", "Сериковна"),
        ("Ерланович", "Ерлановна"),
        ("Петрович", "Петровна"),
        ("Маратович", "Маратовна"),
        ("Аскарович", "Аскаровна"),
    ],
    companies: &[
        "KazLogistics",
        "Almaty Trans",
        "Steppe Cargo",
        "Caspian Freight",
        "Astana Delivery",
        "Жол Сервис",
        "Altyn Auto",
        "Saryarqa Transit",
        "Nomad Fleet",
        "Shymkent Agro",
    ],
    company_forms: ("LLP", "IE"),
    mail_domains: &["mail.kz", "gmail.com", "inbox.kz", "yandex.kz", "mail.ru"],
    tax_digits: 12,
};

const GERMANY: Country = Country {
    name: "Germany",
    weight: 25,
    phone_code: "49",
    phone_digits: 10,
    cities: &[
        ("Berlin", "Berlin", "10"),
        ("Bavaria", "München", "80"),
        ("Hamburg", "Hamburg", "20"),
        ("North Rhine-Westphalia", "Köln", "50"),
        ("Saxony", "Leipzig", "04"),
        ("Hesse", "Frankfurt am Main", "60"),
    ],
    streets: &[
        "Hauptstraße",
        "Bahnhofstraße",
        "Industriestraße",
        "Gewerbering",
        "Am Güterbahnhof",
        "Lindenallee",
    ],
    male: &[
        ("Jürgen", "juergen"),
        ("Thomas", "thomas"),
        ("Lukas", "lukas"),
        ("Stefan", "stefan"),
        ("Michael", "michael"),
        ("Jörg", "joerg"),
        ("Andreas", "andreas"),
    ],
    female: &[
        ("Anna", "anna"),
        ("Sabine", "sabine"),
        ("Jana", "jana"),
        ("Käthe", "kaethe"),
        ("Petra", "petra"),
        ("Sophie", "sophie"),
    ],
    surnames: &[
        ("Müller", "Müller", "mueller"),
        ("Schmidt", "Schmidt", "schmidt"),
        ("Schneider", "Schneider", "schneider"),
        ("Fischer", "Fischer", "fischer"),
        ("Weiß", "Weiß", "weiss"),
        ("Becker", "Becker", "becker"),
        ("Schäfer", "Schäfer", "schaefer"),
        ("Hoffmann", "Hoffmann", "hoffmann"),
        ("Krüger", "Krüger", "krueger"),
        ("Wagner", "Wagner", "wagner"),
    ],
    patronymics: &[],
    companies: &[
        "Spedition Nord",
        "Kühltransporte Süd",
        "Elbe Logistik",
        "Rhein Cargo",
        "Baustoffe Becker",
        "Alpen Express",
    ],
    company_forms: ("GmbH", "e.K."),
    mail_domains: &["gmx.de", "web.de", "t-online.de", "gmail.com"],
    tax_digits: 11,
};

const POLAND: Country = Country {
    name: "Poland",
    weight: 20,
    phone_code: "48",
    phone_digits: 9,
    cities: &[
        ("Masovian", "Warszawa", "00"),
        ("Lesser Poland", "Kraków", "30"),
        ("Łódź", "Łódź", "90"),
        ("Lower Silesian", "Wrocław", "50"),
        ("Greater Poland", "Poznań", "60"),
    ],
    streets: &[
        "ul. Marszałkowska",
        "ul. Przemysłowa",
        "ul. Kolejowa",
        "ul. Długa",
        "al. Jerozolimskie",
    ],
    male: &[
        ("Łukasz", "lukasz"),
        ("Piotr", "piotr"),
        ("Krzysztof", "krzysztof"),
        ("Tomasz", "tomasz"),
        ("Paweł", "pawel"),
    ],
    female: &[
        ("Agnieszka", "agnieszka"),
        ("Małgorzata", "malgorzata"),
        ("Anna", "anna"),
        ("Katarzyna", "katarzyna"),
    ],
    surnames: &[
        ("Nowak", "Nowak", "nowak"),
        ("Kowalski", "Kowalska", "kowalski"),
        ("Wiśniewski", "Wiśniewska", "wisniewski"),
        ("Wójcik", "Wójcik", "wojcik"),
        ("Lewandowski", "Lewandowska", "lewandowski"),
        ("Zieliński", "Zielińska", "zielinski"),
        ("Dąbrowski", "Dąbrowska", "dabrowski"),
    ],
    patronymics: &[],
    companies: &[
        "Trans-Pol",
        "Logistyka Wisła",
        "Kurier Mazowsze",
        "Chłodnie Śląsk",
        "Auto-Flota",
    ],
    company_forms: ("Sp. z o.o.", "JDG"),
    mail_domains: &["wp.pl", "onet.pl", "o2.pl", "gmail.com"],
    tax_digits: 10,
};

const COUNTRIES: [&Country; 3] = [&KAZAKHSTAN, &GERMANY, &POLAND];

const COMMENTS: &[&str] = &[
    "moved from the old platform",
    "pays by invoice",
    "VIP: call before blocking",
    "trial until the end of the month",
    "contract No. 2024/117",
    "reseller's customer",
    "second account for the refrigerated fleet",
];

/// Generates the users of one upload or store, the same for the same seed.
#[derive(Debug, Clone)]
pub struct People {
    rng: SplitMix64,
    /// Numbers every login, so logins are unique across generators with
    /// distinct first serials.
    serial: u64,
}

impl People {
    /// Users from `seed`, numbered from `first_serial`.
    pub fn new(seed: u64, first_serial: u64) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            serial: first_serial,
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.between(0, items.len() as u32) as usize]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.between(0, 100) < percent
    }

    fn digits(&mut self, n: u32) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.rng.between(0, 10) as u8))
            .collect()
    }

    fn password(&mut self) -> String {
        const WORDS: &[&str] = &[
            "truck", "Almaty", "summer", "fleet", "Qwerty", "driver", "Sokol", "kaz", "berlin",
            "Orel", "volvo", "Zima",
        ];
        const SYMBOLS: &[&str] = &["", "", "!", "#", "_", ".", "$"];
        let word = *self.pick(WORDS);
        let number = self.rng.between(1, 10_000);
        let symbol = *self.pick(SYMBOLS);
        let mut password = format!("{word}{number}{symbol}");
        if self.chance(30) || password.len() < 8 {
            password = format!("{}{password}", self.pick(WORDS));
        }
        while password.len() < 8 {
            password.push(char::from(b'0' + self.rng.between(0, 10) as u8));
        }
        password.chars().take(16).collect()
    }

    /// The next user.
    pub fn next_person(&mut self) -> Person {
        self.serial += 1;
        let serial = self.serial;
        let total: u32 = COUNTRIES.iter().map(|c| c.weight).sum();
        let mut at = self.rng.between(0, total);
        let country = COUNTRIES
            .iter()
            .find(|c| {
                let found = at < c.weight;
                at = at.saturating_sub(c.weight);
                found
            })
            .copied()
            .unwrap_or(&KAZAKHSTAN);
        let female = self.chance(40);
        let (name, name_ascii) = *self.pick(if female { country.female } else { country.male });
        let (male_surname, female_surname, surname_ascii) = *self.pick(country.surnames);
        let surname = if female { female_surname } else { male_surname };
        let middle_name = if !country.patronymics.is_empty() && self.chance(70) {
            let (m, f) = *self.pick(country.patronymics);
            if female { f } else { m }
        } else {
            ""
        };
        let legal_status = match self.rng.between(0, 100) {
            0..60 => 1,
            60..88 => 2,
            _ => 3,
        };
        let company = *self.pick(country.companies);
        let domain = if legal_status == 2 && self.chance(60) {
            let base: String = company
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
                .to_lowercase();
            let tld = match country.name {
                "Germany" => "de",
                "Poland" => "pl",
                _ => "kz",
            };
            if base.is_empty() {
                format!("fleet{serial}.{tld}")
            } else {
                format!("{base}.{tld}")
            }
        } else {
            (*self.pick(country.mail_domains)).to_owned()
        };
        let login = match self.rng.between(0, 4) {
            0 => format!("{name_ascii}.{surname_ascii}.{serial}@{domain}"),
            1 => format!(
                "{}{surname_ascii}{serial}@{domain}",
                &name_ascii[..name_ascii.len().min(1)]
            ),
            2 => format!("{surname_ascii}_{name_ascii}{serial}@{domain}"),
            _ => format!("{name_ascii}{serial}@{domain}"),
        };
        let phone = if self.chance(85) {
            format!(
                "{}{}",
                country.phone_code,
                self.digits(country.phone_digits)
            )
        } else {
            String::new()
        };
        let (region, city, zip_prefix) = *self.pick(country.cities);
        let street = format!(
            "{} {}{}",
            self.pick(country.streets),
            self.rng.between(1, 240),
            if self.chance(30) {
                format!(", office {}", self.rng.between(1, 400))
            } else {
                String::new()
            }
        );
        let zip = format!("{zip_prefix}{}", self.digits(3));
        let company_address = legal_status != 1 || self.chance(30);
        let address = if company_address {
            [
                country.name.to_owned(),
                region.to_owned(),
                city.to_owned(),
                street,
                zip,
            ]
        } else {
            Default::default()
        };
        let legal_name = match legal_status {
            2 => format!("{company} {}", country.company_forms.0),
            3 => format!("{} {name} {surname}", country.company_forms.1),
            _ => String::new(),
        };
        let tax_number = if legal_status == 1 {
            String::new()
        } else {
            self.digits(country.tax_digits)
        };
        let iec = if legal_status == 2 && country.name == "Kazakhstan" {
            format!("{}", self.pick(&[17, 16, 19]))
        } else {
            String::new()
        };
        let registered = if legal_status != 1 && self.chance(80) {
            address.clone()
        } else {
            Default::default()
        };
        let (discount, discount_end) = if self.chance(8) {
            let value = *self.pick(&["5", "7,5", "10", "12,5", "15", "20"]);
            let end = if self.chance(60) {
                format!(
                    "2027-{:02}-{:02}",
                    self.rng.between(1, 13),
                    self.rng.between(1, 29)
                )
            } else {
                String::new()
            };
            (value.to_owned(), end)
        } else {
            (String::new(), String::new())
        };
        let device_limit = if legal_status != 1 && self.chance(40) {
            self.pick(&[5, 10, 25, 50, 100, 250]).to_string()
        } else {
            String::new()
        };
        let comment = if self.chance(12) {
            (*self.pick(COMMENTS)).to_owned()
        } else {
            String::new()
        };
        Person {
            login,
            password: self.password(),
            active: self.chance(92),
            legal_status,
            surname: surname.to_owned(),
            name: name.to_owned(),
            middle_name: middle_name.to_owned(),
            phone,
            comment,
            address,
            legal_name,
            tax_number,
            iec,
            registered,
            discount,
            discount_end,
            device_limit,
        }
    }

    /// The next `n` users.
    pub fn take(&mut self, n: usize) -> Vec<Person> {
        (0..n).map(|_| self.next_person()).collect()
    }
}
