//! The benchmark's vehicles, trackers and garages, deterministic and
//! realistic: makes and models in fleet proportions with their VIN prefixes,
//! VINs with a valid check digit, registration numbers in one national
//! style, fleet numbers, depots of a few companies in a few cities, drivers'
//! names (some not ASCII) and the notes fleets keep.

use platform::{FuelType, Garage, Location, Vehicle, VehicleType};

use crate::fleet::SplitMix64;
use VehicleType::{Bus, Car, Special, Truck};

/// A make and model, its share of a fleet and where its VINs start.
struct Model {
    make: &'static str,
    model: &'static str,
    kind: VehicleType,
    subtype: &'static str,
    /// World manufacturer identifier and the model's descriptor section.
    vin_prefix: &'static str,
    /// Relative share of a fleet.
    weight: u32,
}

const fn m(
    make: &'static str,
    model: &'static str,
    kind: VehicleType,
    subtype: &'static str,
    vin_prefix: &'static str,
    weight: u32,
) -> Model {
    Model {
        make,
        model,
        kind,
        subtype,
        vin_prefix,
        weight,
    }
}

/// A haulage and distribution fleet: tractors and rigid trucks first, vans,
/// some buses (staff transport) and site machinery. Volvo is about a fifth.
const MODELS: &[Model] = &[
    m("Volvo", "FH 460", Truck, "tractor", "YV2RT40A", 90),
    m("Volvo", "FM 11", Truck, "tipper", "YV2XG30D", 40),
    m("Volvo", "FL 280", Truck, "refrigerator", "YV2E4C1A", 30),
    m("Scania", "R 450", Truck, "tractor", "YS2R4X20", 70),
    m("Scania", "P 280", Truck, "covered", "YS2P4X20", 35),
    m("MAN", "TGX 18.470", Truck, "tractor", "WMA06XZZ", 65),
    m("MAN", "TGS 33.440", Truck, "tipper", "WMA26SZZ", 30),
    m("MAN", "TGL 12.250", Truck, "board", "WMAN08ZZ", 25),
    m(
        "Mercedes-Benz",
        "Actros 1845",
        Truck,
        "tractor",
        "WDB96340",
        60,
    ),
    m(
        "Mercedes-Benz",
        "Atego 1224",
        Truck,
        "awning",
        "WDB96700",
        30,
    ),
    m("DAF", "XF 480", Truck, "tractor", "XLRTEH43", 55),
    m("DAF", "CF 340", Truck, "container", "XLRAEH23", 20),
    m("Iveco", "S-Way 490", Truck, "tanker", "ZCFCE62R", 25),
    m("Renault Trucks", "T 480", Truck, "tractor", "VF634AVA", 30),
    m("Ford", "Transit Custom", Car, "minivan", "WF0YXXTT", 45),
    m("Volkswagen", "Crafter 35", Car, "minivan", "WV1ZZZSY", 35),
    m(
        "Mercedes-Benz",
        "Sprinter 316",
        Car,
        "minivan",
        "WDB90663",
        40,
    ),
    m("Toyota", "Hilux", Car, "pickup", "AHTKB3CD", 20),
    m("Skoda", "Octavia Combi", Car, "universal", "TMBJG7NE", 25),
    m(
        "Volkswagen",
        "Passat Variant",
        Car,
        "universal",
        "WVWZZZ3C",
        15,
    ),
    m("Mercedes-Benz", "Citaro", Bus, "city", "WEB62802", 8),
    m("MAN", "Lion's Coach", Bus, "intercity", "WMAR07ZZ", 6),
    m("Iveco", "Crossway", Bus, "shuttle", "VNESFR13", 6),
    m("Caterpillar", "320", Special, "excavator", "CAT0320G", 5),
    m("JCB", "3CX", Special, "excavator", "JCB3CX4T", 5),
    m(
        "Liebherr",
        "LTM 1050",
        Special,
        "mobile_crane",
        "WLHA5030",
        3,
    ),
    m("John Deere", "6155R", Special, "tractor", "1L06155R", 3),
];

/// Companies of a group; each runs depots in some of [`CITIES`].
const COMPANIES: &[&str] = &[
    "Nordwind Logistik GmbH",
    "TransBaltic Sp. z o.o.",
    "Danubia Freight Kft.",
    "Alpenland Spedition AG",
    "Rhône Express SAS",
];

/// Depot cities with their code and position.
const CITIES: &[(&str, &str, f64, f64)] = &[
    ("Hamburg", "HAM", 53.5511, 9.9937),
    ("Berlin", "BER", 52.5200, 13.4050),
    ("Warszawa", "WAW", 52.2297, 21.0122),
    ("Gdańsk", "GDN", 54.3520, 18.6466),
    ("Budapest", "BUD", 47.4979, 19.0402),
    ("Wien", "VIE", 48.2082, 16.3738),
    ("München", "MUC", 48.1351, 11.5820),
    ("Zürich", "ZRH", 47.3769, 8.5417),
    ("Lyon", "LYS", 45.7640, 4.8357),
    ("Praha", "PRG", 50.0755, 14.4378),
];

const SURNAMES: &[&str] = &[
    "Müller",
    "Schmidt",
    "Nowak",
    "Kowalski",
    "Wiśniewski",
    "Horváth",
    "Nagy",
    "Novák",
    "Dvořák",
    "Gruber",
    "Huber",
    "Dubois",
    "Lefèvre",
    "Rossi",
    "Jansen",
    "Kovač",
    "Şahin",
    "Petrović",
    "Ødegaard",
    "García",
    "Becker",
    "Wagner",
    "Zieliński",
    "Szabó",
];

const FIRST_NAMES: &[&str] = &[
    "Anna",
    "Jan",
    "Piotr",
    "Katarzyna",
    "Lukas",
    "Jonas",
    "Marie",
    "Zsófia",
    "Tomáš",
    "Élodie",
    "Marco",
    "Sven",
    "Ivana",
    "Mehmet",
];

const COLORS: &[&str] = &[
    "white", "silver", "blue", "red", "black", "grey", "yellow", "green",
];

const NOTES: &[&str] = &[
    "Tachograph calibrated at the depot; next check due with the annual inspection.",
    "Tail lift serviced. Driver reports a rattle from the cab mount at high speed.",
    "ADR equipment on board: two extinguishers, warning triangles, spill kit.",
    "Leased vehicle; return inspection booked with the lessor before the lease ends.",
    "Winter tyres fitted in November; summer set stored at the depot's tyre hotel.",
    "Reefer unit logs temperature every 5 minutes; download weekly for the client.",
    "Spare key kept in the dispatcher's safe. Fuel card PIN changed in March.",
    "Crane certificate renewed; operator must carry the load chart in the cab.",
];

/// Letters of the registration numbers (the ones alike in Latin and Cyrillic).
const PLATE_LETTERS: &[u8] = b"ABCEHIKMOPTX";

/// Letters a VIN may hold (no I, O or Q).
const VIN_CHARS: &[u8] = b"ABCDEFGHJKLMNPRSTUVWXYZ0123456789";

/// Model-year codes of a VIN's tenth character, from 2010.
const VIN_YEARS: &[u8] = b"ABCDEFGHJKLMNPRS";

/// A vehicle to create, with the tracker to bind to it and its garage
/// (an index into the account's garages).
#[derive(Debug, Clone)]
pub struct PlannedVehicle {
    /// The vehicle, `tracker_id` and `garage_id` still empty.
    pub vehicle: Vehicle,
    /// Label and device model of the tracker it carries, if any.
    pub tracker: Option<(String, String)>,
    /// Its garage among the account's, if any.
    pub garage: Option<usize>,
}

/// Deterministic generator of one account's vehicles and garages.
#[derive(Debug, Clone)]
pub struct FleetGenerator {
    rng: SplitMix64,
    total_weight: u32,
    /// Vehicles bound to a tracker, as a share.
    tracker_share: f64,
    /// Vehicles in a garage, as a share.
    garage_share: f64,
    /// The account's garages.
    garages: usize,
}

impl FleetGenerator {
    /// A generator from `seed`; `tracker_share` of the vehicles carry a
    /// tracker and `garage_share` belong to one of `garages` garages.
    pub fn new(seed: u64, tracker_share: f64, garage_share: f64, garages: usize) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            total_weight: MODELS.iter().map(|m| m.weight).sum(),
            tracker_share,
            garage_share,
            garages,
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let i = self.rng.between(0, items.len() as u32) as usize;
        &items[i.min(items.len() - 1)]
    }

    fn model(&mut self) -> &'static Model {
        let mut left = self.rng.between(0, self.total_weight);
        for model in MODELS {
            if left < model.weight {
                return model;
            }
            left -= model.weight;
        }
        &MODELS[0]
    }

    fn digits(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.rng.between(0, 10) as u8))
            .collect()
    }

    fn plate(&mut self) -> String {
        let mut letter = || char::from(*self.pick(PLATE_LETTERS));
        let (a, b) = (letter(), letter());
        let (c, d) = (letter(), letter());
        format!("{a}{b} {} {c}{d}", self.digits(4))
    }

    fn vin(&mut self, model: &Model, year: i64) -> String {
        let year_code = VIN_YEARS[((year - 2010).clamp(0, 15)) as usize];
        let plant = *self.pick(VIN_CHARS);
        let mut vin: Vec<u8> = model.vin_prefix.bytes().collect();
        vin.push(b'0');
        vin.push(year_code);
        vin.push(plant);
        vin.extend(self.digits(6).bytes());
        vin[8] = vin_check_digit(&vin);
        String::from_utf8_lossy(&vin).into_owned()
    }

    fn person(&mut self) -> String {
        format!("{} {}", self.pick(FIRST_NAMES), self.pick(SURNAMES))
    }

    /// The account's garages: depots of the group's companies.
    pub fn garages(&mut self) -> Vec<Garage> {
        (0..self.garages)
            .map(|i| {
                let company = COMPANIES[i % COMPANIES.len()];
                let (city, _, lat, lng) = CITIES[(i / COMPANIES.len() + i) % CITIES.len()];
                let depot = i / (COMPANIES.len() * CITIES.len()) + 1;
                Garage {
                    id: None,
                    location: Some(Location {
                        lat: lat + self.rng.noise(0.05),
                        lng: lng + self.rng.noise(0.05),
                        address: format!("{city}, Industriestraße {}", self.rng.between(1, 200)),
                        radius: Some(i64::from(self.rng.between(100, 500))),
                    }),
                    mechanic_name: Some(self.person()),
                    dispatcher_name: Some(self.person()),
                    organization_name: Some(format!("{company} {city} {depot}")),
                }
            })
            .collect()
    }

    /// Vehicle `n` of the fleet (its fleet number is `10000 + n`).
    pub fn vehicle(&mut self, n: usize) -> PlannedVehicle {
        let model = self.model();
        let fleet_no = 10_000 + n;
        let garage = (self.garages > 0 && self.rng.chance(self.garage_share))
            .then(|| self.rng.between(0, self.garages as u32) as usize);
        let city = CITIES[garage.unwrap_or(n) % CITIES.len()];
        let label = match self.rng.between(0, 10) {
            0..=6 => format!("{} {} #{fleet_no}", model.make, model.model),
            7 | 8 => format!("{}-{fleet_no} {}", city.1, model.make),
            _ => format!("{} {fleet_no}", self.pick(SURNAMES)),
        };
        let reg_number = self.plate();
        let year = i64::from(self.rng.between(2012, 2025));
        let vin = self.vin(model, year);
        let mut v = Vehicle::new(&label, model.kind);
        v.model = format!("{} {}", model.make, model.model);
        v.subtype = Some(model.subtype.to_owned());
        v.manufacture_year = Some(year);
        v.color = Some((*self.pick(COLORS)).to_owned());
        v.additional_info = Some(format!(
            "{} Assigned to {} ({}).",
            self.pick(NOTES),
            self.person(),
            city.0
        ));
        v.chassis_number = vin.clone();
        v.frame_number = Some(vin.get(9..).unwrap_or_default().to_owned());
        v.reg_number = reg_number.clone();
        v.vin = vin;
        v.liability_insurance_policy_number = format!("AC/{}", self.digits(9));
        v.liability_insurance_valid_till = Some(format!(
            "2025-{:02}-{:02}",
            self.rng.between(1, 13),
            self.rng.between(1, 29)
        ));
        v.free_insurance_policy_number = format!("KSK-{}-{}", self.digits(4), self.digits(6));
        v.free_insurance_valid_till = Some(format!("2025-{:02}-01", self.rng.between(1, 13)));
        v.icon_color = Some(format!("{:06x}", self.rng.next_u64() & 0xff_ffff));
        v.tags = (1..=8).filter(|_| self.rng.chance(0.2)).collect();
        match model.kind {
            Truck => {
                v.max_speed = 90;
                v.fuel_type = Some(FuelType::Diesel);
                v.fuel_grade = "EN 590".into();
                v.norm_avg_fuel_consumption = (self.rng.range(24.0, 36.0) * 10.0).round() / 10.0;
                v.fuel_tank_volume = i64::from(self.rng.between(3, 10)) * 100;
                v.payload_weight = i64::from(self.rng.between(8, 27)) * 1000;
                v.gross_weight = Some(v.payload_weight + 8000);
                v.payload_length = 13_600.0;
                v.payload_width = 2_480.0;
                v.payload_height = 2_700.0;
                v.passengers = 2;
                v.wheel_arrangement = if model.subtype == "tipper" {
                    "6x4"
                } else {
                    "4x2"
                }
                .into();
                v.tyres_number = if model.subtype == "tipper" { 10 } else { 6 };
                v.tyre_size = "315/70 R22.5".into();
                if model.subtype == "tractor" {
                    v.trailer = Some(format!("Schmitz Cargobull S.KO {}", self.plate()));
                }
            }
            Car => {
                v.max_speed = 160;
                v.fuel_type = Some(if self.rng.chance(0.7) {
                    FuelType::Diesel
                } else {
                    FuelType::Petrol
                });
                v.fuel_grade = "EN 590".into();
                v.norm_avg_fuel_consumption = (self.rng.range(6.0, 11.0) * 10.0).round() / 10.0;
                v.fuel_tank_volume = i64::from(self.rng.between(50, 90));
                v.payload_weight = i64::from(self.rng.between(5, 15)) * 100;
                v.passengers = 3;
                v.wheel_arrangement = "4x2".into();
                v.tyres_number = 4;
                v.tyre_size = "215/65 R16C".into();
            }
            Bus => {
                v.max_speed = 100;
                v.fuel_type = Some(if self.rng.chance(0.8) {
                    FuelType::Diesel
                } else {
                    FuelType::Gas
                });
                v.fuel_grade = "EN 590".into();
                v.norm_avg_fuel_consumption = (self.rng.range(25.0, 40.0) * 10.0).round() / 10.0;
                v.fuel_tank_volume = 300;
                v.passengers = i64::from(self.rng.between(40, 100));
                v.wheel_arrangement = "4x2".into();
                v.tyres_number = 6;
                v.tyre_size = "275/70 R22.5".into();
            }
            Special => {
                v.max_speed = 40;
                v.fuel_type = Some(FuelType::Diesel);
                v.fuel_grade = "EN 590".into();
                v.norm_avg_fuel_consumption = (self.rng.range(12.0, 25.0) * 10.0).round() / 10.0;
                v.fuel_tank_volume = i64::from(self.rng.between(2, 5)) * 100;
                v.passengers = 1;
                v.wheel_arrangement = "4x4".into();
                v.tyres_number = 4;
                v.tyre_size = "17.5 R25".into();
            }
        }
        let tracker = self.rng.chance(self.tracker_share).then(|| {
            let label = match self.rng.between(0, 3) {
                0 => format!("{} ({})", reg_number, self.pick(SURNAMES)),
                1 => format!("FMC130 {}", city.1),
                _ => reg_number.clone(),
            };
            let device_model = self.pick(&["fmb920", "fmc130", "fmb140"]);
            (label, (*device_model).to_owned())
        });
        PlannedVehicle {
            vehicle: v,
            tracker,
            garage,
        }
    }
}

/// The check digit of a VIN (ISO 3779, North American rule): its ninth character.
fn vin_check_digit(vin: &[u8]) -> u8 {
    const WEIGHTS: [u32; 17] = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];
    let value = |c: u8| -> u32 {
        match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'H' => u32::from(c - b'A') + 1,
            b'J'..=b'R' => [1, 2, 3, 4, 5, 0, 7, 0, 9][usize::from(c - b'J')],
            b'S'..=b'Z' => u32::from(c - b'S') + 2,
            _ => 0,
        }
    };
    let sum: u32 = vin.iter().zip(WEIGHTS).map(|(&c, w)| value(c) * w).sum();
    match sum % 11 {
        10 => b'X',
        digit => b'0' + digit as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vins_carry_their_check_digit() {
        // A published example: 1M8GDM9AXKP042788.
        assert_eq!(vin_check_digit(b"1M8GDM9A_KP042788"), b'X');
        let mut fleet = FleetGenerator::new(7, 0.6, 0.8, 10);
        for n in 0..200 {
            let v = fleet.vehicle(n).vehicle;
            assert_eq!(v.vin.len(), 17, "{}", v.vin);
            assert!(v.reg_number.chars().count() <= 15);
            assert_eq!(v.vin.as_bytes()[8], vin_check_digit(v.vin.as_bytes()));
            assert!(v.label.chars().count() <= 100);
        }
    }

    #[test]
    fn the_fleet_is_the_same_for_the_same_seed() {
        let labels = |seed| {
            let mut fleet = FleetGenerator::new(seed, 0.6, 0.8, 10);
            (0..50)
                .map(|n| fleet.vehicle(n).vehicle.label)
                .collect::<Vec<_>>()
        };
        assert_eq!(labels(1), labels(1));
        assert_ne!(labels(1), labels(2));
    }
}
