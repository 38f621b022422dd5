"""Data pools the world generator draws from: product types and their options, names, streets, cities.

Kept apart from the generator so the pools can grow without touching the sampling logic. Every pool is
a tuple (ordered), so drawing from it with a seeded `random.Random` is reproducible.
"""

from __future__ import annotations

from typing import NamedTuple


class ProductType(NamedTuple):
    """A kind of product: its option dimensions (name → possible values) and its unit price range."""

    name: str
    options: dict[str, tuple[str, ...]]
    price: tuple[float, float]


def _t(name: str, lo: float, hi: float, **options: tuple[str, ...]) -> ProductType:
    return ProductType(name, {k.replace("_", " "): v for k, v in options.items()}, (lo, hi))


# Data tables are laid out by hand for reading; the formatter would put every value on its own line.
# fmt: off
COLORS = ("black", "white", "red", "blue", "green", "silver", "grey", "navy", "beige", "pink")

PRODUCT_TYPES: tuple[ProductType, ...] = (
    _t("T-Shirt", 15, 60, color=COLORS[:6], size=("S", "M", "L", "XL", "XXL"), material=("cotton", "polyester"),
       style=("crew neck", "v-neck")),
    _t("Laptop", 700, 2800, screen_size=("13-inch", "14-inch", "15-inch", "16-inch"), processor=("i5", "i7", "i9"),
       ram=("8GB", "16GB", "32GB"), storage=("256GB SSD", "512GB SSD", "1TB SSD"), color=("silver", "space grey")),
    _t("Running Shoes", 60, 200, size=("7", "8", "9", "10", "11", "12"), color=("black", "white", "red", "blue"),
       material=("mesh", "synthetic", "leather"), sole=("rubber", "EVA", "foam")),
    _t("Smartphone", 400, 1300, color=("black", "white", "gold", "blue"), storage=("64GB", "128GB", "256GB", "512GB"),
       RAM=("4GB", "6GB", "8GB", "12GB"), screen_size=("5.8-inch", "6.1-inch", "6.5-inch", "6.7-inch")),
    _t("Backpack", 40, 250, color=("black", "grey", "navy", "green", "khaki"), size=("small", "medium", "large"),
       material=("nylon", "polyester", "leather", "canvas"), compartment=("laptop", "hydration", "camera")),
    _t("Coffee Maker", 50, 350, color=("black", "stainless steel", "white"), capacity=("1 cup", "4 cups", "8 cups",
       "12 cups"), type=("drip", "french press", "single serve", "pour over"), features=("timer", "auto shutoff",
       "built-in grinder")),
    _t("Water Bottle", 15, 60, capacity=("500ml", "750ml", "1000ml"), material=("glass", "plastic", "stainless steel"),
       color=("black", "blue", "green", "red", "white")),
    _t("Desk Lamp", 25, 180, color=("black", "white", "silver"), brightness=("low", "medium", "high"),
       power_source=("AC adapter", "USB", "battery")),
    _t("Notebook", 8, 40, size=("A4", "A5", "pocket"), cover_type=("hard cover", "soft cover", "spiral")),
    _t("Sunglasses", 60, 320, frame_color=("black", "brown", "silver", "gold"), lens_color=("black", "green", "brown",
       "blue"), lens_type=("polarized", "non-polarized"), frame_material=("plastic", "metal", "acetate")),
    _t("Wristwatch", 90, 2500, strap_material=("leather", "metal", "silicone"), dial_color=("black", "white", "blue",
       "green")),
    _t("Electric Toothbrush", 40, 220, color=("white", "black", "blue", "pink"), speed_settings=("low", "high",
       "variable"), battery_type=("rechargeable", "AA batteries")),
    _t("Yoga Mat", 20, 140, thickness=("4mm", "5mm", "6mm", "8mm"), material=("PVC", "natural rubber", "TPE"),
       color=("blue", "green", "purple", "pink", "black")),
    _t("Bluetooth Speaker", 40, 350, color=("black", "blue", "red", "green"), battery_life=("8 hours", "12 hours",
       "20 hours"), water_resistance=("yes", "no")),
    _t("Gaming Mouse", 30, 180, color=("black", "white", "RGB"), sensor_type=("optical", "laser"),
       connectivity=("wired", "wireless")),
    _t("Action Camera", 150, 550, resolution=("1080p", "4K", "5K"), waterproof=("yes", "no"),
       color=("black", "silver")),
    _t("Garden Hose", 20, 120, length=("25ft", "50ft", "100ft"), material=("rubber", "vinyl", "latex"),
       color=("green", "blue", "black")),
    _t("Hiking Boots", 90, 280, size=("7", "8", "9", "10", "11", "12"), material=("leather", "synthetic"),
       waterproof=("yes", "no")),
    _t("Tablet", 200, 1200, screen_size=("8-inch", "10-inch", "11-inch", "13-inch"), storage=("64GB", "128GB",
       "256GB"), color=("black", "silver", "gold", "rose gold")),
    _t("E-Reader", 80, 300, screen_size=("6-inch", "7-inch", "8-inch"), connectivity=("Wi-Fi", "Wi-Fi + Cellular"),
       storage=("8GB", "16GB", "32GB")),
    _t("Portable Charger", 20, 120, capacity=("5000mAh", "10000mAh", "20000mAh"), output=("USB-A", "USB-C",
       "Wireless"), color=("black", "white", "blue")),
    _t("Indoor Security Camera", 40, 350, resolution=("1080p", "2K", "4K"), field_of_view=("110 degrees",
       "130 degrees", "160 degrees"), connectivity=("Wi-Fi", "Ethernet")),
    _t("Electric Kettle", 25, 180, capacity=("1L", "1.5L", "2L"), material=("plastic", "stainless steel", "glass"),
       color=("black", "white", "silver")),
    _t("Mechanical Keyboard", 60, 280, switch_type=("linear", "tactile", "clicky"), backlight=("none", "white",
       "RGB"), size=("full size", "80%", "60%")),
    _t("Wireless Earbuds", 50, 300, color=("black", "white", "blue"), battery_life=("4 hours", "6 hours", "8 hours"),
       water_resistance=("IPX4", "IPX7", "not resistant")),
    _t("Smart Thermostat", 100, 300, compatibility=("Apple HomeKit", "Google Assistant", "Amazon Alexa"),
       color=("black", "white", "stainless steel")),
    _t("Fleece Jacket", 40, 180, size=("S", "M", "L", "XL"), color=("red", "navy", "black", "grey"),
       zipper=("full", "half")),
    _t("Wall Clock", 20, 320, diameter=("10 inches", "12 inches", "14 inches"), color=("black", "white", "wood"),
       type=("analog", "digital")),
    _t("Dumbbell Set", 50, 550, weight_range=("5-25 lbs", "30-50 lbs", "55-75 lbs"), material=("iron", "rubber",
       "urethane"), set_type=("fixed", "adjustable")),
    _t("Pet Bed", 30, 220, size=("small", "medium", "large"), material=("memory foam", "polyester", "fleece"),
       color=("brown", "grey", "beige")),
    _t("Espresso Machine", 150, 3000, pressure=("9 bar", "15 bar", "19 bar"), capacity=("1L", "1.5L", "2L"),
       type=("manual", "automatic", "capsule")),
    _t("Cycling Helmet", 40, 250, size=("S", "M", "L"), color=("black", "white", "red", "blue"),
       ventilation=("low", "medium", "high")),
    _t("LED Light Bulb", 5, 60, brightness=("60W equivalent", "75W equivalent", "100W equivalent"),
       color_temperature=("warm white", "daylight", "cool white"), connectivity=("none", "Wi-Fi", "Bluetooth")),
    _t("Digital Camera", 400, 3200, resolution=("20MP", "24MP", "30MP"), zoom=("3x", "5x", "10x"),
       storage=("SD card", "CF card")),
    _t("Bookshelf", 80, 600, material=("wood", "metal", "glass"), color=("black", "white", "brown"),
       height=("3 ft", "4 ft", "5 ft", "6 ft")),
    _t("Bicycle", 300, 2000, frame_size=("small", "medium", "large"), color=("red", "blue", "black", "green"),
       type=("road", "mountain", "hybrid")),
    _t("Sneakers", 50, 220, size=("7", "8", "9", "10", "11"), color=("white", "black", "grey", "red"),
       material=("canvas", "leather", "synthetic")),
    _t("Office Chair", 120, 600, material=("mesh", "fabric", "leather"), color=("black", "grey", "blue"),
       armrest=("fixed", "adjustable", "none"), backrest_height=("standard", "high-back")),
    _t("Smart Watch", 150, 550, color=("black", "silver", "gold"), band_material=("silicone", "leather", "metal"),
       display=("AMOLED", "LCD")),
    _t("Tea Kettle", 20, 150, material=("stainless steel", "glass", "ceramic"), capacity=("1 liter", "1.5 liters",
       "2 liters"), stovetop_compatibility=("gas", "electric", "induction")),
    _t("Luggage Set", 100, 700, piece_count=("2-piece", "3-piece", "4-piece"), color=("black", "blue", "red",
       "silver"), material=("softshell", "hardshell")),
    _t("Patio Umbrella", 50, 350, size=("6 ft", "7 ft", "9 ft"), color=("red", "green", "blue", "beige"),
       material=("polyester", "olefin", "sunbrella"), tilt_mechanism=("manual tilt", "auto tilt")),
    _t("Air Purifier", 90, 600, room_size=("small", "medium", "large"), filter_type=("HEPA", "carbon", "ionic"),
       features=("quiet operation", "smart sensors", "night mode")),
    _t("Makeup Kit", 30, 300, skin_tone=("light", "medium", "dark"), kit_size=("basic", "professional"),
       brand=("Brand A", "Brand B", "Brand C")),
    _t("Skateboard", 60, 300, deck_material=("maple", "bamboo", "plastic"), length=("28 inch", "31 inch", "34 inch"),
       design=("plain", "graphic", "custom")),
    _t("Jigsaw Puzzle", 15, 80, pieces=("500", "1000", "1500", "2000"), theme=("animals", "art", "fantasy",
       "landscape"), difficulty_level=("beginner", "intermediate", "expert")),
    _t("Grill", 150, 1200, type=("charcoal", "gas", "electric"), size=("portable", "medium", "large"),
       features=("side burner", "rotisserie", "none")),
    _t("Headphones", 60, 450, type=("on-ear", "over-ear", "in-ear"), connectivity=("wired", "wireless"),
       color=("black", "white", "red", "blue")),
    _t("Vacuum Cleaner", 90, 700, type=("upright", "canister", "robotic", "cordless stick"),
       bagged_or_bagless=("bagged", "bagless"), features=("pet hair removal", "HEPA filter", "cordless")),
    _t("Perfume", 40, 350, scent_family=("woody", "fresh", "oriental", "floral"), size=("30ml", "50ml", "100ml"),
       gender=("men", "women", "unisex")),
    _t("Blender", 40, 450, capacity=("32 oz", "48 oz", "64 oz"), power=("600W", "1000W", "1500W"),
       color=("black", "red", "silver")),
    _t("Rain Jacket", 50, 260, size=("S", "M", "L", "XL"), color=("yellow", "navy", "black", "olive"),
       hood=("fixed", "packable")),
    _t("Camping Tent", 80, 700, capacity=("2-person", "4-person", "6-person"), season=("3-season", "4-season"),
       color=("green", "orange", "grey")),
    _t("Table Lamp", 25, 220, shade_color=("white", "beige", "black"), base_material=("ceramic", "metal", "wood"),
       bulb_type=("LED", "incandescent")),
    _t("Monitor", 120, 1400, screen_size=("24-inch", "27-inch", "32-inch"), resolution=("1080p", "1440p", "4K"),
       refresh_rate=("60Hz", "144Hz", "240Hz")),
    _t("Stand Mixer", 150, 650, capacity=("4.5 qt", "5 qt", "6 qt"), color=("red", "white", "black", "silver"),
       attachments=("basic", "pasta maker", "ice cream maker")),
    _t("Throw Blanket", 20, 140, material=("fleece", "cotton", "wool"), size=("50x60 in", "60x80 in"),
       color=("grey", "cream", "navy", "mustard")),
    _t("Fitness Tracker", 40, 250, color=("black", "blue", "pink"), band_size=("S", "M", "L"),
       heart_rate_monitor=("yes", "no")),
    _t("Cookware Set", 80, 700, piece_count=("5-piece", "10-piece", "12-piece"), material=("stainless steel",
       "nonstick", "cast iron"), color=("black", "silver", "red")),
    _t("Board Game", 15, 90, players=("2-4", "2-6", "3-8"), age_group=("kids", "teens", "adults"),
       theme=("strategy", "party", "cooperative", "trivia")),
)

# Qualifiers that make a second product of an already used type ("Laptop Pro") when more products than
# types are asked for; product names must stay unique because product look-ups list name → id.
PRODUCT_LINES: tuple[str, ...] = ("Pro", "Mini", "Plus", "Lite", "Max", "Classic", "Eco", "Sport", "Travel", "Kids")

FIRST_NAMES: tuple[str, ...] = (
    "Aarav", "Abigail", "Adrian", "Aisha", "Alejandro", "Amara", "Amelia", "Ana", "Anya", "Arjun", "Ava", "Beatriz",
    "Benjamin", "Camila", "Carlos", "Chen", "Chloe", "Daiki", "Daniel", "Diego", "Elena", "Elif", "Emma", "Ethan",
    "Evelyn", "Farah", "Fatima", "Gabriel", "Grace", "Hana", "Harper", "Hiro", "Ines", "Isabella", "Ivan", "Jamal",
    "James", "Jonas", "Juan", "Kai", "Kofi", "Layla", "Lei", "Leo", "Liam", "Lina", "Lucas", "Maya", "Mason", "Mateo",
    "Mei", "Mia", "Mohamed", "Nadia", "Nikhil", "Noah", "Olivia", "Omar", "Priya", "Rafael", "Raj", "Rosa", "Samuel",
    "Sana", "Sofia", "Sophia", "Tariq", "Thea", "Tomas", "Valentina", "Wei", "Yara", "Yuki", "Yusuf", "Zara",
)

LAST_NAMES: tuple[str, ...] = (
    "Adeyemi", "Ahmed", "Alvarez", "Anderson", "Bauer", "Becker", "Brown", "Castro", "Chen", "Costa", "Davis",
    "Dubois", "Fernandez", "Fischer", "Garcia", "Gonzalez", "Gupta", "Haddad", "Hernandez", "Ito", "Jackson",
    "Johansson", "Johnson", "Kaur", "Khan", "Kim", "Kowalski", "Kovacs", "Lee", "Li", "Lopez", "Martin", "Mendes",
    "Moore", "Muller", "Nakamura", "Nguyen", "Novak", "Okafor", "Park", "Patel", "Petrov", "Reyes", "Rossi",
    "Sanchez", "Santos", "Schmidt", "Silva", "Smith", "Tanaka", "Taylor", "Thomas", "Wilson", "Wong", "Yilmaz",
)

STREETS: tuple[str, ...] = (
    "Main Street", "Oak Street", "Elm Street", "Elm Avenue", "Cedar Street", "Cedar Avenue", "Maple Drive",
    "Pine Lane", "Spruce Street", "Willow Lane", "Hickory Lane", "Laurel Lane", "Chestnut Street", "Park Avenue",
    "Broadway", "River Road", "Lakeview Drive", "Highland Drive", "Hillcrest Drive", "Sunset Drive", "Birch Road",
    "Magnolia Court", "Aspen Way", "Meadow Lane", "Forest Avenue", "Harbor Boulevard", "Canyon Road", "Valley View",
)

# (city, state, first three digits of its zip codes)
CITIES: tuple[tuple[str, str, str], ...] = (
    ("New York", "NY", "100"), ("Los Angeles", "CA", "900"), ("Chicago", "IL", "606"), ("Houston", "TX", "770"),
    ("Phoenix", "AZ", "850"), ("Philadelphia", "PA", "191"), ("San Antonio", "TX", "782"), ("San Diego", "CA", "921"),
    ("Dallas", "TX", "752"), ("San Jose", "CA", "951"), ("Austin", "TX", "787"), ("Jacksonville", "FL", "322"),
    ("Fort Worth", "TX", "761"), ("Columbus", "OH", "432"), ("Charlotte", "NC", "282"), ("San Francisco", "CA", "941"),
    ("Indianapolis", "IN", "462"), ("Seattle", "WA", "981"), ("Denver", "CO", "802"), ("Washington", "DC", "200"),
    ("Boston", "MA", "021"), ("Nashville", "TN", "372"), ("Portland", "OR", "972"), ("Atlanta", "GA", "303"),
    ("Minneapolis", "MN", "554"), ("Detroit", "MI", "482"), ("Miami", "FL", "331"), ("Salt Lake City", "UT", "841"),
)

CARD_BRANDS: tuple[str, ...] = ("visa", "visa", "mastercard", "mastercard", "amex", "discover")
# fmt: on
