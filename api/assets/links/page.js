/* Trackhouse geo link page: the live positions a link shares, on a Leaflet map.
 *
 * Plain JavaScript, no build step. The server fills the page's
 * <script id="link-config"> with {"feed": "/links/<hash>/positions",
 * "tiles": "<tile URL template>", "poll_ms": 2000}; this script polls the
 * feed and keeps one marker (label always shown, arrow by heading), one
 * trail and one panel entry per object, and the link's places.
 *
 * Hooks for tests (scripts/browser_test.py): body[data-ready="1"] after the
 * first good answer, body[data-updates] counting good answers,
 * body[data-connection] (connecting|live|reconnecting), body[data-state]
 * (the feed's state); .th-marker[data-key][data-lat][data-lng] per marker;
 * .th-label on marker labels; path.th-trail per trail; [data-object="<key>"] [data-field="speed"]
 * (and address, movement_status, connection_status, vehicle, driver, time)
 * in the panel.
 *
 * Every text from the feed goes into the DOM as text, never as HTML.
 */
(function () {
  "use strict";

  var PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#65a30d", "#4f46e5", "#b45309"];
  var MAX_BACKOFF_MS = 30000;
  var ERROR_TITLES = {
    expired: "This link has expired",
    disabled: "This link has been disabled",
    inactive: "This link is not active",
    not_found: "Link not found"
  };
  var MOVEMENT = { moving: "Moving", stopped: "Stopped" };
  var CONNECTION = { active: "Online", idle: "Idle", offline: "Offline" };

  var config = readConfig();
  var body = document.body;
  var els = {
    title: byId("th-title"),
    live: byId("th-live"),
    main: byId("th-main"),
    loading: byId("th-loading"),
    panel: byId("th-panel"),
    panelToggle: byId("th-panel-toggle"),
    list: byId("th-list"),
    places: byId("th-places"),
    message: byId("th-message"),
    messageTitle: byId("th-message-title"),
    messageText: byId("th-message-text"),
    statusbar: byId("th-statusbar"),
    updated: byId("th-updated"),
    until: byId("th-until"),
    tiles: byId("th-tiles")
  };

  var state = {
    updates: 0,
    failures: 0,
    fitted: false,
    objects: {},      // key -> {marker, el, casing, trail, entry, color}
    order: [],        // keys in feed order
    placesSig: "",
    placeLayers: [],
    selected: null,
    stopped: false,
    display: {},
    since: null       // server_time of the last good answer: the next poll's `since`
  };

  els.title.textContent = document.title || "Live location";

  // --- the map -------------------------------------------------------------

  var map = L.map("th-map", { zoomControl: true, worldCopyJump: true, preferCanvas: false });
  map.setView([20, 0], 2);
  L.control.scale({ imperial: false }).addTo(map);

  // Under the tiles: a faint grid that moves with the map, so markers and
  // trails still read as a map when the tiles cannot load (offline).
  var Grid = L.GridLayer.extend({
    createTile: function () {
      var tile = document.createElement("div");
      tile.className = "th-grid-tile";
      return tile;
    }
  });
  new Grid({ zIndex: 0, tileSize: 256 }).addTo(map);

  var tileLayer = L.tileLayer(config.tiles, {
    maxZoom: 19,
    zIndex: 1,
    crossOrigin: false,
    attribution: /openstreetmap\.org/.test(config.tiles)
      ? '&copy; <a href="https://www.openstreetmap.org/copyright" target="_blank" rel="noopener">OpenStreetMap</a> contributors'
      : ""
  });
  var tileErrors = 0;
  var tileLoads = 0;
  tileLayer.on("tileerror", function () {
    tileErrors += 1;
    if (tileLoads === 0) { els.tiles.hidden = false; }
  });
  tileLayer.on("tileload", function () {
    tileLoads += 1;
    els.tiles.hidden = true;
  });
  tileLayer.addTo(map);
  map.attributionControl.setPrefix('<a href="https://leafletjs.com" target="_blank" rel="noopener">Leaflet</a>');

  var FitControl = L.Control.extend({
    options: { position: "topleft" },
    onAdd: function () {
      var button = L.DomUtil.create("button", "th-fit-button leaflet-bar");
      button.type = "button";
      button.title = "Show all";
      button.setAttribute("aria-label", "Show all");
      L.DomEvent.disableClickPropagation(button);
      L.DomEvent.on(button, "click", function () { fitAll(true); });
      return button;
    }
  });
  new FitControl().addTo(map);

  els.panelToggle.addEventListener("click", function () {
    var collapsed = body.classList.toggle("th-panel-collapsed");
    els.panelToggle.setAttribute("aria-expanded", collapsed ? "false" : "true");
    setTimeout(function () { map.invalidateSize(); }, 200);
  });
  if (window.matchMedia && window.matchMedia("(max-width: 719px)").matches) {
    // Phones start with the map; the list is one tap away.
    body.classList.add("th-panel-collapsed");
    els.panelToggle.setAttribute("aria-expanded", "false");
    map.invalidateSize();
  }

  // --- polling -------------------------------------------------------------

  function poll() {
    if (state.stopped) { return; }
    var controller = window.AbortController ? new AbortController() : null;
    var timeout = setTimeout(function () { if (controller) { controller.abort(); } }, Math.max(10000, config.poll_ms * 3));
    // After a good answer, ask only for the trail points received since it.
    var url = config.feed + (state.since !== null ? (config.feed.indexOf("?") < 0 ? "?" : "&") + "since=" + state.since : "");
    fetch(url, {
      cache: "no-store",
      credentials: "omit",
      headers: { Accept: "application/json" },
      signal: controller ? controller.signal : undefined
    }).then(function (response) {
      clearTimeout(timeout);
      if (response.ok) {
        return response.json().then(function (feed) {
          update(feed);
          schedule(config.poll_ms);
        });
      }
      if (response.status === 403 || response.status === 404 || response.status === 410) {
        return response.json().catch(function () { return {}; }).then(function (answer) {
          showEnded(response.status, answer || {});
        });
      }
      var retry = Number(response.headers.get("Retry-After"));
      throw { retryMs: isFinite(retry) && retry > 0 ? retry * 1000 : 0, status: response.status };
    }).catch(function (error) {
      clearTimeout(timeout);
      if (state.stopped) { return; }
      if (window.console && console.warn) { console.warn("geo link feed:", error); }
      reconnecting();
      var backoff = Math.min(MAX_BACKOFF_MS, config.poll_ms * Math.pow(2, Math.min(state.failures, 5)));
      schedule(Math.max(backoff, (error && error.retryMs) || 0));
    });
  }

  var timer = null;
  function schedule(ms) {
    if (state.stopped) { return; }
    clearTimeout(timer);
    timer = setTimeout(poll, ms);
  }

  document.addEventListener("visibilitychange", function () {
    // Back to the tab: fresh positions now rather than at the next tick.
    if (!document.hidden && !state.stopped && state.updates > 0) { schedule(0); }
  });

  function reconnecting() {
    state.failures += 1;
    body.setAttribute("data-connection", "reconnecting");
    els.live.className = "th-live th-live-reconnecting";
    els.live.textContent = "Reconnecting…";
  }

  // --- a good answer -------------------------------------------------------

  function update(feed) {
    state.failures = 0;
    state.updates += 1;
    state.display = feed.display || {};
    var wasEnded = !els.message.hidden;
    if (wasEnded) {
      els.message.hidden = true;
      els.main.hidden = false;
      map.invalidateSize();
    }
    body.setAttribute("data-state", feed.state || "enabled");
    body.setAttribute("data-connection", "live");
    body.classList.toggle("th-icons", !!state.display.show_icons);
    els.live.className = "th-live th-live-ok";
    els.live.textContent = "Live";
    if (feed.description) {
      els.title.textContent = feed.description;
      document.title = feed.description;
    }

    var objects = Array.isArray(feed.objects) ? feed.objects : [];
    // A delta answer (asked with `since`) adds to the trails kept; a full one replaces them.
    var delta = state.since !== null;
    state.since = typeof feed.server_time === "number" ? feed.server_time : null;
    var seen = {};
    var added = false;
    state.order = [];
    objects.forEach(function (object, index) {
      var key = String(object.key);
      seen[key] = true;
      state.order.push(key);
      if (updateObject(key, object, index, feed.server_time, delta)) { added = true; }
    });
    Object.keys(state.objects).forEach(function (key) {
      if (!seen[key]) { removeObject(key); }
    });
    // Panel order follows the feed.
    state.order.forEach(function (key) { els.list.appendChild(state.objects[key].entry); });

    updatePlaces(Array.isArray(feed.places) ? feed.places : []);

    var serverTime = typeof feed.server_time === "number" ? feed.server_time : Date.now();
    els.updated.textContent = "Updated " + clock(serverTime);
    els.updated.title = new Date(serverTime).toString();
    if (typeof feed.until === "number") {
      els.until.hidden = false;
      els.until.textContent = "Shared until " + dateTime(feed.until);
    } else {
      els.until.hidden = true;
    }

    if (!state.fitted) {
      state.fitted = fitAll(false);
    } else if (state.display.autoscale && (added || outOfView())) {
      fitAll(true);
    }

    els.loading.hidden = true;
    body.setAttribute("data-ready", "1");
    body.setAttribute("data-updates", String(state.updates));
  }

  /** Creates or updates one object; true when its marker is new. */
  function updateObject(key, object, index, serverTime, delta) {
    var entry = state.objects[key];
    if (!entry) {
      entry = state.objects[key] = { color: PALETTE[index % PALETTE.length], key: key };
      entry.entry = document.createElement("li");
      entry.entry.className = "th-entry";
      entry.entry.setAttribute("data-object", key);
      entry.entry.style.setProperty("--th-color", entry.color);
      entry.entry.addEventListener("click", function (event) {
        if (event.target.closest && event.target.closest("a")) { return; }
        select(key, true);
      });
    }
    var position = object.position && isFinite(object.position.lat) && isFinite(object.position.lng) ? object.position : null;
    var added = false;

    // Trail: the points kept ([lat, lng, time], by time) with the feed's new
    // ones merged in, cut to the last trace_duration seconds; it ends at the
    // current position.
    var fresh = (Array.isArray(object.trail) ? object.trail : []).filter(function (p) {
      return Array.isArray(p) && isFinite(p[0]) && isFinite(p[1]) && isFinite(p[2]);
    });
    var kept = delta && entry.points ? entry.points.concat(fresh) : fresh;
    kept.sort(function (a, b) { return a[2] - b[2]; });
    var from = (typeof serverTime === "number" ? serverTime : Date.now()) - 1000 * (Number(state.display.trace_duration) || 0);
    entry.points = kept.filter(function (p, i) {
      return (p[2] >= from || i === kept.length - 1) && !(i > 0 && kept[i - 1][2] === p[2]);
    });
    if (!position) { entry.points = []; }
    var points = entry.points.map(function (p) { return [p[0], p[1]]; });
    if (position) {
      var last = points[points.length - 1];
      if (!last || last[0] !== position.lat || last[1] !== position.lng) { points.push([position.lat, position.lng]); }
    }
    if (points.length >= 2) {
      if (!entry.trail) {
        entry.casing = L.polyline(points, { color: "#ffffff", weight: 7, opacity: 0.85, interactive: false, lineJoin: "round", className: "th-trail-casing" }).addTo(map);
        entry.trail = L.polyline(points, { color: entry.color, weight: 4, opacity: 0.9, interactive: false, lineJoin: "round", className: "th-trail" }).addTo(map);
      } else {
        entry.casing.setLatLngs(points);
        entry.trail.setLatLngs(points);
      }
    } else if (entry.trail) {
      map.removeLayer(entry.casing);
      map.removeLayer(entry.trail);
      entry.casing = entry.trail = null;
    }

    if (position) {
      if (!entry.marker) {
        entry.el = markerElement(key, entry.color);
        var icon = L.divIcon({ html: entry.el, className: "th-marker-icon", iconSize: null });
        entry.marker = L.marker([position.lat, position.lng], { icon: icon, keyboard: true, riseOnHover: true, title: "" });
        entry.marker.on("click", function () { select(key, false); });
        entry.marker.addTo(map);
        added = true;
      } else {
        entry.marker.setLatLng([position.lat, position.lng]);
      }
      paintMarker(entry, object, position);
    } else if (entry.marker) {
      map.removeLayer(entry.marker);
      entry.marker = entry.el = null;
    }

    renderEntry(entry, object, position, serverTime);
    return added;
  }

  function removeObject(key) {
    var entry = state.objects[key];
    [entry.marker, entry.casing, entry.trail].forEach(function (layer) { if (layer) { map.removeLayer(layer); } });
    if (entry.entry.parentNode) { entry.entry.parentNode.removeChild(entry.entry); }
    if (state.selected === key) { state.selected = null; }
    delete state.objects[key];
  }

  var SVG = "http://www.w3.org/2000/svg";
  function svg(name, attributes, children) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attributes).forEach(function (a) { node.setAttribute(a, attributes[a]); });
    (children || []).forEach(function (c) { node.appendChild(c); });
    return node;
  }

  function markerElement(key, color) {
    var root = document.createElement("div");
    root.className = "th-marker";
    root.setAttribute("data-key", key);
    root.style.setProperty("--th-color", color);
    var pin = document.createElement("div");
    pin.className = "th-pin";
    // Heading arrow (shown when the heading is known), dot otherwise.
    pin.appendChild(svg("svg", { "class": "th-arrow", viewBox: "0 0 24 24", "aria-hidden": "true" }, [
      svg("path", { d: "M12 3 L19 20 L12 16 L5 20 Z" })
    ]));
    pin.appendChild(svg("svg", { "class": "th-vehicle", viewBox: "0 0 24 24", "aria-hidden": "true" }, [
      svg("path", { d: "M3 7h11v8H3z M14 10h4l3 3v2h-7z" }),
      svg("circle", { cx: "7", cy: "17", r: "2" }),
      svg("circle", { cx: "17", cy: "17", r: "2" })
    ]));
    var pointer = document.createElement("div");
    pointer.className = "th-pointer";
    pin.appendChild(pointer);
    var dot = document.createElement("div");
    dot.className = "th-dot";
    pin.appendChild(dot);
    root.appendChild(pin);
    var label = document.createElement("div");
    label.className = "th-label";
    root.appendChild(label);
    return root;
  }

  function paintMarker(entry, object, position) {
    var el = entry.el;
    el.setAttribute("data-lat", String(position.lat));
    el.setAttribute("data-lng", String(position.lng));
    var heading = typeof position.heading === "number" && isFinite(position.heading) ? position.heading : null;
    el.setAttribute("data-heading", heading === null ? "" : String(heading));
    el.style.setProperty("--th-heading", (heading || 0) + "deg");
    el.classList.toggle("th-has-heading", heading !== null && object.movement_status !== "stopped");
    el.classList.toggle("th-stopped", object.movement_status === "stopped");
    el.classList.toggle("th-offline", object.connection_status === "offline");
    el.classList.toggle("th-idle", object.connection_status === "idle");
    el.querySelector(".th-label").textContent = object.label || "—";
    var title = object.label || "";
    if (typeof object.speed === "number") { title += " · " + Math.round(object.speed) + " km/h"; }
    el.title = title;
  }

  // --- the panel -------------------------------------------------------------

  function renderEntry(entry, object, position, serverTime) {
    var li = entry.entry;
    li.textContent = "";
    li.classList.toggle("th-no-position", !position);
    li.classList.toggle("th-offline", object.connection_status === "offline");

    var head = element("div", "th-entry-head");
    var swatch = element("span", "th-swatch");
    head.appendChild(swatch);
    head.appendChild(element("span", "th-entry-label", object.label || "—"));
    var time = element("span", "th-entry-time", position ? ago(position.time, serverTime) : "No position yet");
    time.setAttribute("data-field", "time");
    if (position) { time.title = dateTime(position.time); }
    head.appendChild(time);
    li.appendChild(head);

    var chips = element("div", "th-chips");
    if (typeof object.speed === "number") {
      chips.appendChild(field("span", "th-chip th-chip-speed", "speed", Math.round(object.speed) + " km/h"));
    }
    if (object.movement_status) {
      chips.appendChild(field("span", "th-chip th-chip-" + object.movement_status, "movement_status",
        MOVEMENT[object.movement_status] || object.movement_status));
    }
    if (object.connection_status) {
      chips.appendChild(field("span", "th-chip th-chip-" + object.connection_status, "connection_status",
        CONNECTION[object.connection_status] || object.connection_status));
    }
    if (chips.childNodes.length) { li.appendChild(chips); }

    if (typeof object.address === "string" && object.address) {
      li.appendChild(field("div", "th-address", "address", object.address));
    }

    var details = element("dl", "th-details");
    var vehicle = object.vehicle;
    if (vehicle && (vehicle.label || vehicle.reg_number)) {
      var v = element("dd", "");
      v.setAttribute("data-field", "vehicle");
      if (vehicle.label) { v.appendChild(element("span", "th-vehicle-label", vehicle.label)); }
      if (vehicle.reg_number) { v.appendChild(element("span", "th-plate", vehicle.reg_number)); }
      details.appendChild(element("dt", "", "Vehicle"));
      details.appendChild(v);
    }
    var driver = object.driver;
    if (driver && (driver.name || driver.phone)) {
      var d = element("dd", "");
      d.setAttribute("data-field", "driver");
      if (driver.name) { d.appendChild(element("span", "th-driver-name", driver.name)); }
      if (driver.phone) {
        var phone = element("a", "th-phone", driver.phone);
        phone.href = "tel:" + String(driver.phone).replace(/[^0-9+]/g, "");
        d.appendChild(phone);
      }
      details.appendChild(element("dt", "", "Driver"));
      details.appendChild(d);
    }
    if (details.childNodes.length) { li.appendChild(details); }
    li.classList.toggle("th-selected", state.selected === entry.key);
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function field(tag, className, name, text) {
    var node = element(tag, className, text);
    node.setAttribute("data-field", name);
    return node;
  }

  function select(key, fromPanel) {
    var previous = state.selected && state.objects[state.selected];
    if (previous) {
      previous.entry.classList.remove("th-selected");
      if (previous.el) { previous.el.classList.remove("th-selected"); }
    }
    state.selected = key;
    var entry = state.objects[key];
    if (!entry) { return; }
    entry.entry.classList.add("th-selected");
    if (entry.el) { entry.el.classList.add("th-selected"); }
    if (fromPanel && entry.marker) {
      map.setView(entry.marker.getLatLng(), Math.max(map.getZoom(), 15), { animate: true });
      if (window.matchMedia && window.matchMedia("(max-width: 719px)").matches) {
        body.classList.add("th-panel-collapsed");
        els.panelToggle.setAttribute("aria-expanded", "false");
        setTimeout(function () { map.invalidateSize(); }, 200);
      }
    } else if (!fromPanel) {
      if (body.classList.contains("th-panel-collapsed")) {
        body.classList.remove("th-panel-collapsed");
        els.panelToggle.setAttribute("aria-expanded", "true");
        setTimeout(function () { map.invalidateSize(); }, 200);
      }
      if (entry.entry.scrollIntoView) { entry.entry.scrollIntoView({ block: "nearest", behavior: "smooth" }); }
    }
  }

  // --- places ------------------------------------------------------------------

  function updatePlaces(places) {
    var sig = JSON.stringify(places);
    if (sig === state.placesSig) { return; }
    state.placesSig = sig;
    state.placeLayers.forEach(function (layer) { map.removeLayer(layer); });
    state.placeLayers = [];
    places.forEach(function (place) {
      if (!isFinite(place.lat) || !isFinite(place.lng)) { return; }
      var style = { color: "#6d28d9", weight: 2, dashArray: "5 5", fillColor: "#8b5cf6", fillOpacity: 0.12 };
      var layer = typeof place.radius === "number" && place.radius > 0
        ? L.circle([place.lat, place.lng], L.extend({ radius: place.radius }, style))
        : L.circleMarker([place.lat, place.lng], L.extend({ radius: 7, fillOpacity: 0.6, dashArray: null }, style));
      if (place.label) {
        var label = element("span", "th-place-name", place.label);
        layer.bindTooltip(label, { permanent: true, direction: "center", className: "th-place-label", opacity: 1 });
      }
      layer.addTo(map);
      state.placeLayers.push(layer);
    });
  }

  // --- the view ------------------------------------------------------------------

  function markerBounds(withTrails) {
    var bounds = L.latLngBounds([]);
    Object.keys(state.objects).forEach(function (key) {
      var entry = state.objects[key];
      if (entry.marker) {
        bounds.extend(entry.marker.getLatLng());
        if (withTrails && entry.trail) { bounds.extend(entry.trail.getBounds()); }
      }
    });
    return bounds;
  }

  /** Fits the view to the markers and their trails (the places when there are none); false when there is nothing. */
  function fitAll(animate) {
    var bounds = markerBounds(true);
    if (!bounds.isValid()) {
      state.placeLayers.forEach(function (layer) {
        bounds.extend(layer.getBounds ? layer.getBounds() : layer.getLatLng());
      });
    }
    if (!bounds.isValid()) { return false; }
    var padding = map.getSize().x < 500 ? [30, 30] : [60, 60];
    if (bounds.getNorthEast().equals(bounds.getSouthWest())) {
      map.setView(bounds.getCenter(), Math.max(map.getZoom(), 15), { animate: animate });
    } else {
      map.fitBounds(bounds, { padding: padding, maxZoom: 16, animate: animate });
    }
    return true;
  }

  function outOfView() {
    var bounds = markerBounds(false);
    return bounds.isValid() && !map.getBounds().contains(bounds);
  }

  // --- the link has ended --------------------------------------------------------

  function showEnded(status, answer) {
    var kind = answer.state || (status === 410 ? "expired" : status === 404 ? "not_found" : "disabled");
    body.setAttribute("data-state", kind);
    body.setAttribute("data-connection", "ended");
    els.messageTitle.textContent = ERROR_TITLES[kind] || "This link is not available";
    els.messageText.textContent = answer.message || "The locations shared by this link cannot be shown.";
    els.message.setAttribute("data-state", kind);
    els.message.hidden = false;
    els.main.hidden = true;
    els.live.className = "th-live th-live-ended";
    els.live.textContent = "Not available";
    els.panelToggle.hidden = true;
    els.tiles.hidden = true;
    els.until.hidden = true;
    if (status === 403) {
      // A disabled link may be enabled again: look now and then.
      schedule(Math.max(30000, config.poll_ms));
    } else {
      state.stopped = true;
    }
  }

  // --- helpers --------------------------------------------------------------------

  function readConfig() {
    var defaults = { feed: null, tiles: "https://tile.openstreetmap.org/{z}/{x}/{y}.png", poll_ms: 2000 };
    var node = document.getElementById("link-config");
    var parsed = {};
    try { parsed = JSON.parse(node ? node.textContent : "{}") || {}; } catch (e) { parsed = {}; }
    var result = {
      feed: typeof parsed.feed === "string" ? parsed.feed : location.pathname.replace(/\/+$/, "") + "/positions",
      tiles: typeof parsed.tiles === "string" && parsed.tiles ? parsed.tiles : defaults.tiles,
      poll_ms: Number(parsed.poll_ms) >= 500 ? Number(parsed.poll_ms) : defaults.poll_ms
    };
    return result;
  }

  function byId(id) { return document.getElementById(id); }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  function clock(ms) {
    var d = new Date(ms);
    return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function dateTime(ms) {
    try {
      return new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date(ms));
    } catch (e) {
      return new Date(ms).toLocaleString();
    }
  }

  function ago(time, serverTime) {
    var now = typeof serverTime === "number" ? serverTime : Date.now();
    var seconds = Math.max(0, Math.round((now - time) / 1000));
    if (seconds < 45) { return "just now"; }
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) { return minutes + " min ago"; }
    var hours = Math.round(minutes / 60);
    if (hours < 24) { return hours + " h ago"; }
    return dateTime(time);
  }

  poll();
})();
