(function () {
  "use strict";
  var keySha = document.body.getAttribute("data-key-sha256");
  var items = Array.prototype.slice.call(document.querySelectorAll(".suggestion"));
  var counter = document.getElementById("counter");
  var status = document.getElementById("status");
  var storeKey = "backretrieval-ratings-" + keySha;
  var raterKey = "backretrieval-rater-" + keySha;
  var rater = document.getElementById("rater");
  var raterRe = /^[A-Za-z0-9_.-]{1,64}$/;
  function checked(it) { return it.querySelector("input[type=radio]:checked"); }
  function update() {
    var rated = 0;
    items.forEach(function (it) {
      var c = checked(it);
      if (c) { rated++; it.classList.add("rated"); } else { it.classList.remove("rated"); }
    });
    counter.textContent = rated + " rated, " + (items.length - rated) + " unrated (of " + items.length + ")";
    return rated;
  }
  function persist() {
    try {
      var saved = {};
      items.forEach(function (it) { var c = checked(it); if (c) { saved[it.getAttribute("data-sid")] = c.value; } });
      window.localStorage.setItem(storeKey, JSON.stringify(saved));
    } catch (e) { /* storage unavailable: ratings live only in this page */ }
  }
  function restore() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(storeKey) || "{}");
      items.forEach(function (it) {
        var v = saved[it.getAttribute("data-sid")];
        if (v) { var r = it.querySelector("input[value='" + v + "']"); if (r) { r.checked = true; } }
      });
      rater.value = window.localStorage.getItem(raterKey) || "";
    } catch (e) { /* ignore */ }
  }
  document.getElementById("sheet").addEventListener("change", function () { update(); persist(); });
  rater.addEventListener("change", function () {
    try { window.localStorage.setItem(raterKey, rater.value.trim()); } catch (e) { /* ignore */ }
  });
  document.getElementById("save").addEventListener("click", function () {
    var rid = rater.value.trim();
    if (!raterRe.test(rid)) {
      status.textContent = "Please enter your rater id (letters, digits, _ . - ; at most 64 characters) before saving.";
      rater.focus();
      return;
    }
    var lines = ["suggestion_id,rating,rater,key_sha256"];
    items.forEach(function (it) {
      var c = checked(it);
      lines.push(it.getAttribute("data-sid") + "," + (c ? c.value : "") + "," + rid + "," + keySha);
    });
    var blob = new Blob([lines.join("\n") + "\n"], { type: "text/csv" });
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "ratings.csv";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 2000);
    var unrated = items.length - update();
    status.textContent = unrated ? ("Saved ratings.csv - " + unrated + " suggestion(s) still unrated; please rate all before sending.")
                                 : "Saved ratings.csv - all suggestions rated. Thank you!";
  });
  restore();
  update();
})();
